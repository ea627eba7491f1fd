"""pytest's output summarized: the failing tests with their error lines and key frames, counts for the rest."""

from __future__ import annotations

import re
from collections import OrderedDict

from agents.context.summary import Facts, Summary, cut, fold_frames

_TOP = re.compile(r"^=+ (?P<title>.+?) =+$")
_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_CAPTURED = re.compile(r"^-{3,} (Captured|captured) .* -{3,}$")
_SHORT = re.compile(r"^(?P<status>FAILED|ERROR) (?P<id>[^\s\[]+(?:\[.*?\])?)(?: - (?P<msg>.*))?$")
_VERBOSE = re.compile(r"^(?P<id>\S+::\S+?(?:\[.*?\])?) (?P<status>FAILED|ERROR|PASSED)\b")
_PASSED = re.compile(r"^PASSED \S")
_FAILED_LIST = re.compile(r"^failed: (?P<ids>.+)$")
_FAILED_MESSAGE = re.compile(r"^  (?P<id>[^\s:]+::\S+?(?:\[.*?\])?): (?P<msg>.+)$")  # run_tests' head
_COUNTS = re.compile(r"\b\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b")
_FRAME_SHORT = re.compile(r"^(?P<path>[^\s:][^:\s]*):(?P<line>\d+): in (?P<func>\S+)\s*$")
_FRAME_LONG = re.compile(r"^(?P<path>[^\s:][^:\s]*\.\w+):(?P<line>\d+): ?(?P<exc>[\w.]*)\s*$")
_FRAME_NATIVE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
_DEF = re.compile(r"^>?\s*(?:async\s+)?def (?P<func>\w+)\s*\(")
_EXC_LINE = re.compile(r"^(assert\b|AssertionError\b|[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failed|Failure|"
                       r"Warning|Timeout|Refused|Aborted|Iteration)\b|[A-Za-z_][\w.]*: )")
_NOISE = re.compile(r"^(Omitting \d+ identical items|Use -v|Full diff:|\(pytest_assertion plugin)")
_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")


class _Failure:
    def __init__(self, name: str, top: str) -> None:
        self.name = name
        self.top = top
        self.lines: list[str] = []
        self.captured = 0


def _section_key(name: str) -> str:
    return re.sub(r"^ERROR (at (setup|teardown|call) of|collecting) ", "", name).strip()


def _id_key(test_id: str) -> str:
    parts = test_id.split("::")
    return ".".join(parts[1:]) if len(parts) > 1 else test_id


def _failure_details(f: _Failure) -> tuple[list[str], list[str], list[str]]:
    """(principal error lines, other error lines, frames) of one failure section."""
    principal: list[str] = []
    detail: list[str] = []
    frames: list[str] = []
    last_def: str | None = None
    block_first = True
    for line in f.lines:
        if any(line.startswith(c) for c in _CHAINED):
            block_first = True
            continue
        if line.startswith("E ") or line == "E":
            text = line[1:].strip()
            if not text:
                continue
            if block_first or _EXC_LINE.match(text):
                if text not in principal:
                    principal.append(text)
            elif text not in detail:
                detail.append(text)
            block_first = False
            continue
        if line.startswith("_ _"):  # pytest's separator between the frames of one traceback
            block_first = True
        m = _DEF.match(line.strip()) if line.startswith(("    ", ">")) else None
        if m:
            last_def = m["func"]
            continue
        m = _FRAME_SHORT.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']} in {m['func']}")
            last_def = None
            continue
        m = _FRAME_NATIVE.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']}" + (f" in {m['func']}" if m["func"] else ""))
            continue
        m = _FRAME_LONG.match(line)
        if m:
            frames.append(f"{m['path']}:{m['line']}" + (f" in {last_def}" if last_def else ""))
            last_def = None
            block_first = True
    return principal, detail, frames


def summarize_pytest(text: str, *, max_detail: int = 1) -> Summary:
    """Failing tests with their error lines and key frames; counts for the rest."""
    read = _PytestOutput()
    for raw in text.splitlines():
        read.feed(raw.rstrip())
    for i in read.listed:
        read.short.setdefault(i, "")
    entries = _paired(read.failures, read.short)
    facts = Facts(tests_summary=read.summary_line)
    out = [f"pytest: {read.summary_line or 'no summary line'}"
           + (f" ({read.passed} PASSED lines omitted)" if read.passed else "")]
    if entries:
        out.append(f"failing ({len(entries)}):")
    for test_id, f in entries:
        facts.failing_tests.append(test_id)
        if f is None:
            msg = read.short.get(test_id, "")
            out.append(f"- {test_id}" + (f" - {cut(msg)}" if msg else ""))
            if msg:
                facts.error_lines.append(msg)
            continue
        out += _failure_lines(test_id, f, facts, max_detail)
    facts.error_lines = list(dict.fromkeys(facts.error_lines))
    return Summary(kind="pytest", text="\n".join(out), facts=facts)


class _PytestOutput:
    """What pytest's output says, line by line: the failure sections, the short summary's ids and messages, the
    ids of a verbose run, the passed count and the summary line."""

    def __init__(self) -> None:
        self.top = ""
        """The section the lines are in (FAILURES, ERRORS, short test summary info, ...)."""
        self.failures: list[_Failure] = []
        self.current: _Failure | None = None
        self.in_captured = False
        self.short: OrderedDict[str, str] = OrderedDict()
        """Failing test ids and their messages, in order."""
        self.listed: list[str] = []
        self.passed = 0
        self.summary_line = ""

    def feed(self, line: str) -> None:
        m = _TOP.match(line)
        if m:
            self.top = m["title"].strip().upper()
            self.current, self.in_captured = None, False
            if _COUNTS.search(line) and " in " in line:
                self.summary_line = m["title"].strip()
            return
        if self.top in ("FAILURES", "ERRORS") and self._in_failures(line):
            return
        if m := _SHORT.match(line):
            self.short.setdefault(m["id"], (m["msg"] or "").strip())
        elif m := _VERBOSE.match(line):
            if m["status"] == "PASSED":
                self.passed += 1
            else:
                self.short.setdefault(m["id"], "")
        elif _PASSED.match(line):
            self.passed += 1
        elif m := _FAILED_LIST.match(line):
            self.listed += [i.strip() for i in m["ids"].split(", ") if i.strip()]
        elif (m := _FAILED_MESSAGE.match(line)) and not self.top:
            if not self.short.get(m["id"]):
                self.short[m["id"]] = m["msg"].strip()
        elif not self.summary_line and _COUNTS.search(line) and re.search(r" in [\d.]+s", line):
            self.summary_line = line.strip()

    def _in_failures(self, line: str) -> bool:
        """A line of the FAILURES or ERRORS sections: a test's header, its captured output or its body."""
        s = _SECTION.match(line)
        if s:
            self.current, self.in_captured = _Failure(s["name"], self.top), False
            self.failures.append(self.current)
            return True
        if _CAPTURED.match(line):
            self.in_captured = True
            return True
        if self.current is not None:
            if self.in_captured:
                self.current.captured += 1
            else:
                self.current.lines.append(line)
            return True
        return False


def _paired(failures: list[_Failure], short: OrderedDict[str, str]) -> list[tuple[str, _Failure | None]]:
    """Failure sections paired with the full ids of the short summary (same name; the test file among the
    frames), then the ids that have no section."""
    used: set[str] = set()
    entries: list[tuple[str, _Failure | None]] = []
    for f in failures:
        key = _section_key(f.name)
        candidates = [i for i in short if i not in used and (_id_key(i) == key or i == key)]
        body = "\n".join(f.lines)
        chosen = next((i for i in candidates if i.split("::")[0] in body), candidates[0] if candidates else None)
        if chosen is None:
            chosen = key
        used.add(chosen)
        entries.append((chosen, f))
    return entries + [(i, None) for i in short if i not in used]


def _failure_lines(test_id: str, f: _Failure, facts: Facts, max_detail: int) -> list[str]:
    """One failing test with a section: its error lines, its key frames (or the line, when it failed in the test
    itself) and how much it printed; its frames and error lines go into ``facts``."""
    principal, detail, frames = _failure_details(f)
    kept_frames = fold_frames(frames)
    facts.frames += [fr for fr in kept_frames if not fr.startswith("...") and fr not in facts.frames]
    where = ""
    if len(kept_frames) == 1 and test_id.split("::")[0] == kept_frames[0].split(":")[0]:
        where = f" (line {kept_frames[0].split(':')[1].split(' ')[0]})"
        kept_frames = []
    out = [f"- {test_id}{where}" + (" [setup error]" if "at setup of" in f.name else "")]
    out += [f"    E {cut(e)}" for e in principal]
    out += [f"    E {cut(e)}" for e in [d for d in detail if not _NOISE.match(d)][:max_detail]]
    if kept_frames:
        out.append("    at " + " > ".join(kept_frames))
    if f.captured:
        out.append(f"    ({f.captured} lines of captured output)")
    facts.error_lines += principal
    return out


def looks_like_pytest(text: str) -> bool:
    return bool(re.search(r"^=+ (test session starts|FAILURES|ERRORS|short test summary info) =+$", text, re.M)
                or re.search(r"^(FAILED|ERROR) \S+::\S+", text, re.M)
                or re.search(r"^=* ?\d+ (passed|failed)\b.* in [\d.]+s", text, re.M))
