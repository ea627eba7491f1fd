#!/usr/bin/env bash
# bosun's one bootstrap: idempotent; prints what it did. Called by `make demo` (`bootstrap.sh demo`: what the demo
# and bosun itself need), `make test` and `make bootstrap` (`bootstrap.sh`, or `test`: that, and what the suite
# needs besides).
#   1. system packages (docker.io, nats-server, bubblewrap, git, ripgrep, debootstrap, python3-venv; patch for the
#      evaluation's fallback; openssl for local TLS certificates; for the suite only: chromium and chromium-driver
#      for the web view's browser tests, nginx for Temporal behind TLS in `bosun cluster up --tls`)
#   2. .venv with bosun and its dev extras, pinned by constraints.txt (reinstalled only when they change)
#   3. the Docker daemon, started when it is not running
#   4. the sandbox image, built locally with debootstrap + docker import (rebuilt only when its recipe changes)
#   5. the base root filesystem environments of new commits are layered on (Python 3.13, Debian trixie; the 3.9
#      and 3.11 bases are built when a repository first needs them)
#   6. `bosun` on the PATH: /usr/local/bin/bosun links to .venv/bin/bosun (root, and nothing else is there)
# Where it cannot act (not root, no apt) it stops and prints the exact command to run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
FOR=${1:-test}
say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }
case "$FOR" in demo|test) ;; *) die "usage: infra/bootstrap.sh [demo|test] (got '$FOR')";; esac
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# 1. system packages ---------------------------------------------------------------------------------------
PKGS=(docker.io nats-server bubblewrap git ripgrep debootstrap python3-venv python3-pytest ca-certificates patch openssl iproute2 util-linux iptables)
if [ "$FOR" = test ]; then PKGS+=(nginx chromium chromium-driver); fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing packages: ${missing[*]}; this is not a Debian/Ubuntu system (no apt-get): install them with your package manager, then run make again"
  if [ -n "$SUDO" ] && ! sudo -n true 2>/dev/null; then
    die "missing packages: ${missing[*]}. Run: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  fi
  say "installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  if [[ " ${missing[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null && systemctl is-active -q nginx 2>/dev/null; then
    # bosun runs nginx as its own process (bosun cluster up --tls); the package's site on port 80 is not wanted
    say "stopping and disabling the nginx service the package started (bosun starts its own nginx when needed)"
    $SUDO systemctl disable --now -q nginx || true
  fi
else
  say "system packages present (${PKGS[*]})"
fi

# 2. python environment ------------------------------------------------------------------------------------
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "bosun needs Python >= 3.11; $PY is $("$PY" -V 2>&1)"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
stamp=$(cat pyproject.toml constraints.txt 2>/dev/null | sha256sum | cut -c1-16)
if [ "$(cat .venv/.bosun-installed 2>/dev/null)" != "$stamp" ] || ! .venv/bin/python -c 'import infra, temporalio' 2>/dev/null; then
  say "installing bosun and its dev extras into .venv (constraints.txt)"
  .venv/bin/pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
  .venv/bin/python -c 'import infra, temporalio, nats, docker, tree_sitter_language_pack' \
    || die "the Python install failed; see the pip output above"
  echo "$stamp" > .venv/.bosun-installed
else
  say ".venv up to date"
fi
# bosun's own modules, compiled once here: with PYTHONDONTWRITEBYTECODE set (as in many CI images), every bosun
# process would otherwise compile them again from source (up to 0.3 s a command). Only what changed is compiled.
if .venv/bin/python -m compileall -q -j0 entry evaluation workflows activities agents environments sandbox infra \
    >/dev/null 2>&1; then
  say "bosun's modules compiled (__pycache__)"
else
  say "warning: compiling bosun's modules failed (python -m compileall); bosun still runs, only slower to start"
fi

# 3. docker daemon -----------------------------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
  say "docker engine running"
else
  if [ -n "$SUDO" ]; then
    die "the Docker engine is not running. Run: sudo systemctl start docker (and add yourself to the docker group: sudo usermod -aG docker \$USER, then log in again)"
  fi
  if [ -d /run/systemd/system ] && systemctl start docker 2>/dev/null; then
    say "started docker with systemctl"
  else
    say "starting dockerd (log: /var/log/bosun-dockerd.log)"
    nohup dockerd >/var/log/bosun-dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || die "dockerd did not come up in 30 s; see /var/log/bosun-dockerd.log"
  say "docker engine running"
fi

# 4. sandbox image -----------------------------------------------------------------------------------------
if [ -x sandbox/image/build.sh ]; then
  bash sandbox/image/build.sh
else
  die "sandbox/image/build.sh is missing"
fi

# 5. environment base ---------------------------------------------------------------------------------------
# Environments (bosun env; each task's repository) are layered on a base root filesystem per interpreter. The one
# a commit made today gets (Python 3.13) is built here, once (a few minutes), so the first task's environment
# builds in seconds; `bosun env bases` lists them.
if [ -n "$SUDO" ]; then
  say "not root: environment bases are built on first use by a root worker (bosun env bases --build 3.13)"
else
  .venv/bin/bosun env bases --build 3.13 2>&1 | sed 's/^bosun env: /bootstrap: /' \
    || die "building the environment base failed (see above); retry with: .venv/bin/bosun env bases --build 3.13"
  say "environment base for Python 3.13 present"
fi
# 6. bosun on the PATH -------------------------------------------------------------------------------------------
LINK=/usr/local/bin/bosun
here=$(command -v bosun 2>/dev/null || true)
if [ "$here" != "$LINK" ] && [ -n "$here" ] && [ "$(readlink -f "$here")" = "$ROOT/.venv/bin/bosun" ]; then
  say "bosun is on the PATH ($here)"
elif [ -z "$SUDO" ] && { [ ! -e "$LINK" ] && [ ! -L "$LINK" ] || [[ "$(readlink "$LINK" 2>/dev/null)" == */.venv/bin/bosun ]]; }; then
  before=$(readlink "$LINK" 2>/dev/null || true)
  if [ "$before" != "$ROOT/.venv/bin/bosun" ]; then
    ln -sfn "$ROOT/.venv/bin/bosun" "$LINK"
    say "linked $LINK -> $ROOT/.venv/bin/bosun (bosun is on the PATH)${before:+; it pointed to $before, another checkout}"
  else
    say "bosun is on the PATH ($LINK -> $ROOT/.venv/bin/bosun)"
  fi
else
  say "bosun is at $ROOT/.venv/bin/bosun; to call it as \`bosun\`: export PATH=\"$ROOT/.venv/bin:\$PATH\""
fi
say "done"
