"""Declared image environments (environments/image.py): reading devcontainer.json and the declaration (pure), and
real builds of a repository's Dockerfile, a devcontainer's and a named image, with their sandboxes."""

from __future__ import annotations

import subprocess
import time

import pytest

from environments.buildrun import BuildFailed
from environments.dockerping import image_exists
from environments.image import read_devcontainer, strip_jsonc
from environments.runtime import provider_for
from infra.errors import ConfigError
from tests.environments.test_detect import spec_of
from tests.sandbox.conftest import TEST_LIMITS
from tests.sandbox.envfixtures import built, make_repo

DOCKERFILE_ONLY = 'dockerfile = "Dockerfile"\ntest_command = "make test"\n'
C_REPO = {"Makefile": "test:\n\tcc -o t t.c && ./t\n", "t.c": "int main(void) { return 0; }\n"}
"""A repository of no ecosystem detection knows (C, make)."""


def test_jsonc_comments_and_trailing_commas_go_strings_stay():
    text = '{\n // a comment\n "image": "https://x//y", /* block\n */ "a": ["\\"//", 1,],\n}\n'
    assert strip_jsonc(text).replace(" ", "").replace("\n", "") == '{"image":"https://x//y","a":["\\"//",1]}'


def test_a_devcontainer_is_read_as_its_spec_says():
    text = """{
      // the build, relative to this file's folder
      "build": {"dockerfile": "Dockerfile", "context": "..", "args": {"NODE": 20}, "target": "dev"},
      "onCreateCommand": "make deps",
      "updateContentCommand": ["npm", "ci", "--ignore-scripts"],
      "postCreateCommand": {"one": "echo ${containerWorkspaceFolder}/x", "two": ["make", "gen"]},
      "postStartCommand": "make serve", "initializeCommand": "rm -rf ~", "features": {"ghcr.io/x/y:1": {}},
      "containerEnv": {"MODE": "test", "FROM_HOST": "${localEnv:HOME}"},
    }"""
    dc = read_devcontainer(text, ".devcontainer/devcontainer.json")
    assert dc.image is not None and dc.image.dockerfile == ".devcontainer/Dockerfile" and dc.image.context == ""
    assert dc.image.build_args == {"NODE": "20"} and dc.image.target == "dev"
    assert dc.setup == ["make deps", "npm ci --ignore-scripts", "echo /workspace/x", "make gen"]
    assert dc.env == {"MODE": "test"}
    said = " ".join(dc.notes)
    for left_out in ("initializeCommand", "postStartCommand", "features", "FROM_HOST", "not in parallel"):
        assert left_out in said, said
    named = read_devcontainer('{"image": "mcr.microsoft.com/devcontainers/base:bookworm"}', ".devcontainer.json")
    assert named.image is not None and named.image.image == "mcr.microsoft.com/devcontainers/base:bookworm"
    assert read_devcontainer('{"features": {}}', ".devcontainer.json").image is None


@pytest.mark.parametrize("text, message", [
    ('{"dockerComposeFile": "compose.yml", "service": "app"}', "dockerComposeFile is not supported"),
    ('{"build": {"dockerfile": "../../etc/Dockerfile"}}', "outside the repository"),
    ('{"build": {"dockerfile": "Dockerfile", "context": "../.."}}', "outside the repository"),
    ('{"image": "Not An Image"}', "is not an image reference"),
    ('{"build": {"dockerfile": "Dockerfile", "args": {"a b": "1"}}}', "build args"),
    ('{"postCreateCommand": 7, "image": "x:1"}', "postCreateCommand must be"),
    ('{"image": "x:1",', "not valid JSON"),
    ('[1]', "expected an object"),
])
def test_a_devcontainer_that_cannot_be_used_is_refused_naming_the_file(text, message):
    with pytest.raises(ConfigError, match=".devcontainer/devcontainer.json") as err:
        read_devcontainer(text, ".devcontainer/devcontainer.json")
    assert message in str(err.value)


@pytest.mark.parametrize("text, message", [
    ('dockerfile = "a"\nimage = "b:1"\n', "name one image"),
    ('context = "docker"\n', "belong to a dockerfile"),
    ('image = "b:1"\ntarget = "dev"\n', "not to image"),
    ('dockerfile = "a"\npython = "3.11"\nrequirements = ["x"]\n', "python, requirements: with dockerfile"),
    ('dockerfile = "../a"\n', "dockerfile '../a' is outside the repository"),
    ('devcontainer = "/etc/x.json"\n', "outside the repository"),
    ('dockerfile = "a"\ntarget = "a b"\n', "not a stage name"),
])
def test_a_bad_image_declaration_is_refused(text, message):
    with pytest.raises(ConfigError, match=".bosun/environment.toml") as err:
        spec_of({".bosun/environment.toml": text, **C_REPO})
    assert message in str(err.value)


def test_a_repository_detection_does_not_know_uses_its_devcontainer():
    dc = '{"build": {"dockerfile": "Dockerfile"}, "postCreateCommand": "make deps"}'
    # used unasked: nothing says how its tests run, which is said first, and fails where tests run
    unasked = spec_of({**C_REPO, ".devcontainer/devcontainer.json": dc, ".devcontainer/Dockerfile": "FROM debian\n"})
    assert unasked.spec.image is not None and unasked.spec.setup == ["make deps"]
    assert "no test command" in unasked.warning and "test_command" in unasked.warning
    assert "exit 2" in unasked.spec.test.text and unasked.spec.image.runner == "unknown"
    with pytest.raises(ConfigError, match="test_command"):  # declared: the declaration must say it
        spec_of({**C_REPO, "Dockerfile": "FROM debian\n", ".bosun/environment.toml": 'dockerfile = "Dockerfile"\n'})
    det = spec_of({**C_REPO, ".devcontainer/devcontainer.json": dc, ".devcontainer/Dockerfile": "FROM debian\n",
                   ".bosun/environment.toml": 'devcontainer = true\ntest_command = "make test"\n'})
    image = det.spec.image
    assert image is not None and image.dockerfile == ".devcontainer/Dockerfile" and image.source == \
        ".devcontainer/devcontainer.json"
    assert det.spec.setup == ["make deps"] and det.spec.test.text == "make test" and image.runner == "unknown"
    assert det.spec.per_revision and det.spec.origin == "declared" and not det.warning
    # the devcontainer alone, with a declared test command through the operator's file
    alone = spec_of({**C_REPO, ".devcontainer.json": '{"image": "gcc:14"}'},
                    override=("/etc/envs/c.toml", 'devcontainer = true\ntest_command = "make test"\n'))
    assert alone.spec.image is not None and alone.spec.image.image == "gcc:14" and alone.spec.origin == "override"
    assert not alone.spec.per_revision  # nothing of the source goes into the image: one build for every commit


def test_a_repository_detection_knows_keeps_its_environment_beside_a_devcontainer():
    dc = '{"image": "mcr.microsoft.com/devcontainers/python:3.9", "postCreateCommand": "pip install -e ."}'
    det = spec_of({"setup.py": "from setuptools import setup\nsetup(name='d')\n",
                   ".devcontainer/devcontainer.json": dc})
    assert det.spec.image is None and det.spec.python == "3.9" and det.spec.setup_best_effort


def test_an_image_declaration_takes_the_detected_test_command_and_is_keyed_by_its_dockerfile():
    node = {"package.json": '{"scripts": {"test": "jest"}, "devDependencies": {"jest": "29"}}',
            "package-lock.json": "{}", "src/a.js": "", "docker/Dockerfile": "FROM node:20\nRUN npm i -g pnpm\n",
            ".bosun/environment.toml": 'dockerfile = "docker/Dockerfile"\nsetup = ["npm ci"]\n'}
    det = spec_of(node)
    assert det.spec.image is not None and det.spec.image.runner == "jest" and det.spec.test.text == "npm test"
    assert det.spec.node is None and det.spec.setup == ["npm ci"]
    # a declared test command: its runner from its words (npx jest: jest's parser, not "unknown")
    for command, runner in (("npx jest --ci", "jest"), ("yarn vitest run", "vitest"), ("make check", "unknown")):
        declared = spec_of({**node, ".bosun/environment.toml": f'dockerfile = "docker/Dockerfile"\n'
                                                                f'test_command = "{command}"\n'})
        assert declared.spec.image is not None and declared.spec.image.runner == runner, command
    changed = spec_of({**node, "docker/Dockerfile": "FROM node:22\n"})
    assert changed.key("b") != det.key("b") and spec_of({**node, "src/a.js": "x"}).key("b") == det.key("b")
    with pytest.raises(ConfigError, match="the Dockerfile docker/Dockerfile is not in the repository"):
        spec_of({k: v for k, v in node.items() if k != "docker/Dockerfile"})


# -- real builds ---------------------------------------------------------------------------------------------------


def base_tag(envs) -> str:
    """A local image to build from (no registry is reachable here): the newest environment base."""
    return envs.bases.ensure("3.13", docker=envs.api).docker_tag


DOCKERFILE = """FROM {base}
USER root
RUN mkdir -p /opt/tool && printf '#!/bin/sh\\necho tool-ok\\n' > /opt/tool/hello && chmod +x /opt/tool/hello
ENV PATH=/opt/tool:$PATH GREETING=hi
ARG FLAVOUR=plain
COPY data.txt /opt/data.txt
RUN echo "$FLAVOUR" > /opt/flavour
"""
TEST_SH = ('#!/bin/sh\nhello && cat /opt/data.txt /opt/flavour && test -f generated.txt && echo "GREETING=$GREETING"'
           ' && id -u\n')


@pytest.mark.docker
async def test_a_dockerfile_builds_once_and_its_sandboxes_run_in_the_image(envs, tmp_path, request):
    declared = ('dockerfile = "Dockerfile"\nsetup = ["echo made > generated.txt"]\ntest_command = "sh test.sh"\n'
                '[build_args]\nFLAVOUR = "spicy"\n[env]\nMODE = "image"\n')
    repo = make_repo(tmp_path / "img", {"Dockerfile": DOCKERFILE.format(base=base_tag(envs)), "data.txt": "data\n",
                                        "test.sh": TEST_SH, ".bosun/environment.toml": declared, **C_REPO})
    det, tree = envs.detect_repo(str(repo))
    first = envs.ensure(det, tree)
    record = first.record
    request.addfinalizer(lambda: envs.remove(record.env_id))
    assert not first.cached and record.spec.image is not None and record.tool_python == "/usr/bin/python3"
    assert record.python.startswith("3.13") and record.seed_unignored == ["generated.txt"] and not record.rootfs
    assert image_exists(f"bosun-envsrc:{record.key}") is False  # the built system is the environment's layers
    started = time.monotonic()
    again = envs.ensure(*envs.detect_repo(str(repo)))
    assert again.cached and again.record.env_id == record.env_id and time.monotonic() - started < 1.0
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(repo), str(ws)], check=True)
    subprocess.run(["chown", "-R", "1000:1000", str(ws)], check=True)
    box = await provider_for(record, "docker", limits=TEST_LIMITS).acquire(ws)
    try:
        res = await box.exec(["sh", "test.sh"], timeout_s=60)
        assert res.exit_code == 0, res.stdout + res.stderr
        assert res.stdout.split() == ["tool-ok", "data", "spicy", "GREETING=hi", "1000"]
        res = await box.exec(["sh", "-c", "echo $MODE $HOME; touch /opt/x"], timeout_s=30)
        assert res.stdout.split() == ["image", "/tmp/home"] and "Read-only file system" in res.stderr
        res = await box.exec(["python3", "-c", "import socket; socket.create_connection(('pypi.org', 443), 3)"],
                             timeout_s=60)
        assert res.exit_code != 0  # no network in its sandboxes
    finally:
        await box.close()
    with pytest.raises(ConfigError, match="docker backend only"):
        provider_for(record, "bwrap", limits=TEST_LIMITS)


@pytest.mark.docker
def test_a_devcontainers_dockerfile_context_and_setup(envs, tmp_path, request):
    dc = ('{"build": {"dockerfile": "Dockerfile", "context": ".."},'
          ' "postCreateCommand": {"a": "echo one > made.txt", "b": ["sh", "-c", "echo two >> made.txt"]}}')
    files = {".devcontainer/devcontainer.json": dc, "data.txt": "ctx\n",
             ".devcontainer/Dockerfile": f"FROM {base_tag(envs)}\nCOPY data.txt /tmp/seen.txt\n"
                                         "RUN cat /tmp/seen.txt\n", **C_REPO,
             ".bosun/environment.toml": 'devcontainer = true\ntest_command = "make test"\n'}
    record = built(envs, tmp_path / "dc", files, request)
    log = envs.log_of(record).read_text()
    assert "==> dockerfile: docker build -f .devcontainer/Dockerfile ." in log and "\nctx\n" in log, log[-2000:]
    assert "setup 2:" in log and record.seed_unignored == ["made.txt"]


@pytest.mark.docker
def test_a_dockerfile_that_fails_or_an_image_that_lacks_python_fails_the_build(envs, tmp_path):
    base = base_tag(envs)
    for name, dockerfile, step, said in (
            ("fails", f"FROM {base}\nRUN echo about-to-fail && exit 7\n", "dockerfile", "returned a non-zero code: 7"),
            ("nopython", f"FROM {base}\nUSER root\nRUN rm -f /usr/bin/python3*\n", "image check", "python3(>=3.11)"),
            # a python3 that passes the version check and says nothing: refused, not a crash of the build
            ("mute", f"FROM {base}\nUSER root\nRUN rm -f /usr/bin/python3 && printf '#!/bin/sh\\nexit 0\\n' > "
                     "/usr/bin/python3 && chmod +x /usr/bin/python3\n", "image check", "did not say its path")):
        repo = make_repo(tmp_path / name, {"Dockerfile": dockerfile, **C_REPO,
                                           ".bosun/environment.toml": DOCKERFILE_ONLY})
        det, tree = envs.detect_repo(str(repo))
        with pytest.raises(BuildFailed) as err:
            envs.ensure(det, tree)
        assert err.value.step == step and said in str(err.value), str(err.value)
        key = envs.key(det)
        assert envs.store.record(key) is None and image_exists(f"bosun-env:{key}") is False
        assert image_exists(f"bosun-envsrc:{key}") is False


@pytest.mark.docker
def test_a_named_image_is_used_as_it_is_and_one_that_cannot_be_pulled_fails(envs, tmp_path, request):
    record = built(envs, tmp_path / "named", {**C_REPO, ".bosun/environment.toml":
                                              f'image = "{base_tag(envs)}"\ntest_command = "make test"\n'}, request)
    assert record.spec.image is not None and record.backend_refs["docker"] == f"bosun-env:{record.key}"
    assert image_exists(base_tag(envs))  # the image named is not the environment's to remove
    missing = make_repo(tmp_path / "missing", {**C_REPO, ".bosun/environment.toml":
                                               'image = "registry.invalid/none/such:1"\ntest_command = "make"\n'})
    with pytest.raises(BuildFailed) as err:
        envs.ensure(*envs.detect_repo(str(missing)))
    assert err.value.step == "image" and "cannot be pulled" in str(err.value)


@pytest.mark.docker
def test_a_dockerfiles_run_steps_reach_the_internet_but_not_this_host(envs, tmp_path, request):
    """Every RUN of the Dockerfile runs in the build container's network namespace (sandbox/netns.py: build_only):
    a host on the internet answers, every address of this host's own is out of reach."""
    from sandbox import netns
    from tests.sandbox.test_network import PUBLIC, REACH, internet_host

    own = netns.host_addresses()
    with internet_host() as port:
        dockerfile = (f"FROM {base_tag(envs)}\nCOPY reach.py /tmp/reach.py\n"
                      f"RUN python3 /tmp/reach.py {port} {PUBLIC} {' '.join(own)}\n")
        record = built(envs, tmp_path / "reach", {"Dockerfile": dockerfile, "reach.py": REACH, **C_REPO,
                                                  ".bosun/environment.toml": DOCKERFILE_ONLY}, request)
    log = envs.log_of(record).read_text()
    assert f"reached {PUBLIC} hello" in log and "answered" not in log, log[-3000:]
    assert all(f"timeout {address}" in log for address in own), log[-3000:]


def test_a_hostile_devcontainer_is_refused_not_a_crash():
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_devcontainer("[" * 200_000, ".devcontainer.json")  # deeper than the parser recurses
    assert strip_jsonc('"' + "\\\\" * 100_000) .startswith('"')  # an unterminated string of escapes: linear
