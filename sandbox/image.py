"""The docker image of bosun's sandboxes: its tag (a hash of the recipe) and building it when missing.

The recipe is sandbox/image/ (build.sh and anything next to it). ``image_tag()`` computes the same hash as
build.sh, so the Python side knows which image the current recipe wants without running docker.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from infra.errors import UnexpectedEnvironment

IMAGE_DIR = Path(__file__).with_name("image")
BUILD_SCRIPT = IMAGE_DIR / "build.sh"
IMAGE_REPO = "bosun-sandbox"


def recipe_hash() -> str:
    """12 hex digits of sha256 over ``name NUL content NUL`` of every file of the recipe, in byte order of names."""
    h = hashlib.sha256()
    names = sorted((p.name for p in IMAGE_DIR.iterdir() if p.is_file() and not p.name.endswith(".pyc")),
                   key=lambda n: n.encode())
    for name in names:
        h.update(name.encode() + b"\0" + (IMAGE_DIR / name).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def image_tag(repo: str = IMAGE_REPO) -> str:
    """The tag the current recipe builds, e.g. ``bosun-sandbox:3f2a9c0d1e4b``."""
    return f"{repo}:{recipe_hash()}"


def image_present(tag: str) -> bool:
    """Whether the docker engine (DOCKER_HOST honoured) has ``tag``."""
    import docker  # noqa: PLC0415 - optional at import time
    from docker.errors import DockerException, ImageNotFound  # noqa: PLC0415

    try:
        client = docker.from_env(timeout=10)
        try:
            client.images.get(tag)
            return True
        finally:
            client.close()
    except ImageNotFound:
        return False
    except DockerException as exc:
        raise UnexpectedEnvironment(f"the docker engine is not reachable: {exc}") from None


def ensure_image(*, force: bool = False, timeout_s: float = 900) -> str:
    """Build the image with build.sh unless the current recipe's tag exists; returns the tag.

    Raises UnexpectedEnvironment with build.sh's output when the build fails.
    """
    tag = image_tag()
    if not force and image_present(tag):
        return tag
    cmd = ["bash", str(BUILD_SCRIPT), *(["--force"] if force else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=dict(os.environ),
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise UnexpectedEnvironment(f"building the sandbox image failed ({' '.join(cmd)} exited "
                                    f"{proc.returncode}): {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return tag
