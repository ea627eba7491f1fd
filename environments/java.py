"""Java repositories (pure): what pom.xml and the Gradle build files say, and the environment that builds and tests
them.

The JDK is Debian's (``openjdk-21-jdk-headless``, or ``openjdk-25-jdk-headless`` for a project that needs more
than 21: the base's suite has no other); Maven is Debian's ``maven`` (a ``mvnw`` wrapper would download another
from Maven Central); Gradle is the repository's wrapper (``gradlew``: its distribution comes from
services.gradle.org at build time), Debian's ``gradle`` (4.4) only without one. The build resolves the
dependencies and the test plugins with network into ENV_ROOT (``m2``, ``gradle``) by running the test phase once
(its failures let through: Surefire resolves its provider only when it runs tests); the tests run offline (``mvn
-o``, ``gradle --offline``) and their results are the JUnit XML reports the runner writes (Surefire's
``target/surefire-reports``, Gradle's ``build/test-results``), printed after the run for environments/results.py
(``junit``) to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from environments.models import ENV_ROOT, NativeSpec, Reason, TestCommand

JAVA_FILES = ("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
              "gradle/wrapper/gradle-wrapper.properties", ".mvn/wrapper/maven-wrapper.properties", "gradle.properties",
              ".java-version", ".sdkmanrc")
"""What detection reads (and what keys the environment)."""
JDKS = (21, 25)
"""The JDKs of the base's Debian suite (trixie)."""
M2 = f"{ENV_ROOT}/m2"
GRADLE_HOME = f"{ENV_ROOT}/gradle"
ENV = {"MAVEN_OPTS": f"-Dmaven.repo.local={M2}", "GRADLE_USER_HOME": GRADLE_HOME,
       "GRADLE_OPTS": "-Dorg.gradle.daemon=false -Dorg.gradle.console=plain"}
"""Variables of the build and of the sandboxes."""
REPORTS = ("'*/surefire-reports/TEST-*.xml'", "'*/test-results/*/TEST-*.xml'")
STAMP = "/tmp/.bosun-junit-start"
_DUMP = (f"find . \\( -path {' -o -path '.join(REPORTS)} \\) -newer {STAMP} -exec sh -c "
         "'for f; do echo \"<!-- bosun: junit report $f -->\"; cat \"$f\"; echo; done' sh {} +")
"""Prints the JUnit XML reports this run wrote (not an earlier run's), each under a marker line."""

_PROPS = re.compile(r"<(maven\.compiler\.release|maven\.compiler\.source|maven\.compiler\.target|java\.version|"
                    r"release|source)>\s*([0-9.]{1,6})\s*</")
_GRADLE = re.compile(r"(?:JavaLanguageVersion\.of|jvmToolchain)\s*\(\s*(\d{1,2})\s*\)|"
                     r"(?:sourceCompatibility|targetCompatibility)\s*=\s*['\"]?(?:JavaVersion\.VERSION_)?"
                     r"([0-9][0-9._]{0,5})")


@dataclass
class JavaFacts:
    tool: str = ""
    """``maven`` or ``gradle``."""
    java: int = 0
    """The Java version the build files ask for (0: none named)."""
    source: str = ""
    toolchain: bool = False
    """The version is a Gradle toolchain's (it needs that very JDK, not a newer one)."""
    wrapper: bool = False
    """gradlew (Gradle) or mvnw (Maven) at the top."""
    notes: list[str] = field(default_factory=list)


def feature(version: str) -> int:
    """``1.8`` -> 8, ``11`` -> 11, ``17.0.2`` -> 17, ``VERSION_1_8`` digits -> 8; 0 when not a version."""
    parts = [p for p in re.split(r"[._]", version) if p.isdigit()]
    if not parts:
        return 0
    major = int(parts[0])
    return int(parts[1]) if major == 1 and len(parts) > 1 else major


def facts(texts: dict[str, str], present: set[str]) -> JavaFacts:
    """The facts of the build files (read as data: only anchored patterns, each value bounded)."""
    if "pom.xml" in present:
        f = JavaFacts(tool="maven", wrapper="mvnw" in present)
        found = [(feature(v), f"pom.xml <{k}>") for k, v in _PROPS.findall(texts.get("pom.xml", ""))]
    else:
        f = JavaFacts(tool="gradle", wrapper="gradlew" in present)
        found = []
        for name in ("build.gradle", "build.gradle.kts"):
            for a, b in _GRADLE.findall(texts.get(name, "")):
                found.append((feature(a or b), f"{name} {'toolchain' if a else 'compatibility'}"))
    if ".java-version" in texts:
        found.append((feature(texts[".java-version"].strip()[:10]), ".java-version"))
    found = [(v, where) for v, where in found if 1 <= v <= 99]
    if found:
        f.java, f.source = max(found)
        f.toolchain = f.source.endswith(" toolchain")
    return f


def jdk_for(java: int) -> int:
    """The Debian JDK that compiles ``java`` (its ``--release``): the oldest of JDKS at least as new."""
    return next((j for j in JDKS if j >= java), JDKS[-1])


def plan(f: JavaFacts) -> tuple[NativeSpec, list[str], list[str], TestCommand, list[Reason], list[str]]:
    """(the Java part, the Debian packages, the setup commands, the test command, the reasons, the notes)."""
    jdk = jdk_for(f.java)
    notes = list(f.notes)
    reasons = [Reason(field="jdk", value=f"openjdk-{jdk}-jdk-headless",
                      source=(f"{f.source} asks for Java {f.java}" if f.java else "no Java version named") +
                      f": Debian's JDK {jdk} (the base's suite has JDK {' and '.join(map(str, JDKS))})")]
    if f.java > JDKS[-1]:
        notes.append(f"{f.source} asks for Java {f.java}, newer than Debian's JDK {JDKS[-1]}")
    apt = [f"openjdk-{jdk}-jdk-headless"]
    if 0 < f.java < 8:
        notes.append(f"{f.source} asks for Java {f.java}: JDK {jdk} compiles Java 8 and later only")
    if f.toolchain and f.java not in JDKS:
        notes.append(f"{f.source} asks Gradle for a Java {f.java} toolchain, which the base's suite does not have "
                     f"(JDK {' and '.join(map(str, JDKS))}): Gradle fails to find it offline")
    if f.tool == "maven":
        apt.append("maven")
        # (the whole test phase once, failures let through: Surefire resolves its provider only when it runs tests)
        setup = ["mvn -B -ntp -q -Dmaven.test.failure.ignore=true -DfailIfNoTests=false test"]
        run = 'mvn -B -o -ntp -Dsurefire.failIfNoSpecifiedTests=false -DfailIfNoTests=false test "$@"'
        reasons.append(Reason(field="build tool", value="maven (Debian's)", source="pom.xml" + (
            "; mvnw is not used (it downloads Maven)" if f.wrapper else "")))
    else:
        if not f.wrapper:
            apt.append("gradle")
            notes.append("no gradlew: Debian's Gradle 4.4 builds it (a build of Gradle 5 or later fails: add the "
                         "wrapper)")
        gradle = "./gradlew" if f.wrapper else "gradle"
        setup = [f"{gradle} --no-daemon -q test --continue || {gradle} --no-daemon -q testClasses"]
        run = f'{gradle} --no-daemon --offline cleanTest test "$@"'  # (an up-to-date test task writes no report)
        reasons.append(Reason(field="build tool", value="gradle (the wrapper)" if f.wrapper else "gradle (Debian's)",
                              source="gradlew" if f.wrapper else "build.gradle, no wrapper"))
    reasons.append(Reason(field="dependencies", value=setup[0][:100],
                          source="the test phase once at build time, its failures let through: the dependencies "
                          "and the test plugins resolved into the environment; the tests run offline"))
    # the build's own output goes to stderr: stdout holds the reports alone, whatever the log's length
    script = f"touch {STAMP}; {run} >&2; rc=$?; {_DUMP}; exit $rc"
    test = TestCommand(kind="command", argv=["sh", "-c", script, "tests"])
    reasons.append(Reason(field="test_command", value=run.replace(' "$@"', ''), source="the build tool's test task; "
                          "results from its JUnit XML reports"))
    versions = "java -version 2>&1 | sed -n 's/.*version \"\\([^\"]*\\)\".*/java \\1/p'"
    if f.tool == "maven":
        versions += "; mvn -v 2>/dev/null | sed -n 's/^Apache Maven \\([^ ]*\\).*/maven \\1/p'"
    native = NativeSpec(language="java", package=apt[0], versions=versions)
    return native, apt, setup, test, reasons, notes
