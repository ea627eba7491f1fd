#!/usr/bin/env bash
# Build the docker image of bosun's sandboxes: a minimal Debian bookworm root filesystem made with debootstrap,
# imported as bosun-sandbox:<recipe-hash> (and tagged bosun-sandbox:latest). Idempotent: when an image with the
# current recipe hash exists, it only makes sure :latest points at it.
#
# The recipe hash covers every file in this directory, so editing the recipe rebuilds; the tool server is NOT in
# the image (it is bind-mounted read-only at run time), so changing it does not.
#
# Usage: sandbox/image/build.sh [--force] [--print-tag]
# Env:   BOSUN_IMAGE_REPO (default bosun-sandbox), BOSUN_DEBIAN_MIRROR (default http://deb.debian.org/debian),
#        BOSUN_IMAGE_WORKDIR (default /var/tmp), DOCKER (default docker)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="${BOSUN_IMAGE_REPO:-bosun-sandbox}"
MIRROR="${BOSUN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
WORKDIR="${BOSUN_IMAGE_WORKDIR:-/var/tmp}"
DOCKER="${DOCKER:-docker}"
SUITE=bookworm
PACKAGES=python3,python3-pytest,git,patch,ripgrep,ca-certificates,procps
SANDBOX_UID=1000
SANDBOX_GID=1000

# The recipe hash: sha256 over "name NUL content NUL" of every regular file here, in byte order of the names.
# sandbox/image.py computes the same value (image_tag()); keep the two in step.
recipe_hash() {
    (cd "$HERE" && LC_ALL=C find . -maxdepth 1 -type f ! -name '*.pyc' -printf '%f\n' | LC_ALL=C sort |
        while IFS= read -r f; do printf '%s\0' "$f"; cat -- "$f"; printf '\0'; done) | sha256sum | cut -c1-12
}

HASH="$(recipe_hash)"
TAG="$REPO:$HASH"
FORCE=0
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        --print-tag) echo "$TAG"; exit 0 ;;
        *) echo "build.sh: unknown argument $arg (expected --force or --print-tag)" >&2; exit 2 ;;
    esac
done

if ! "$DOCKER" info >/dev/null 2>&1; then
    echo "build.sh: the docker engine is not reachable (DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock});" \
         "start it (e.g. 'dockerd &' as root) and run again" >&2
    exit 1
fi

if [[ $FORCE == 0 ]] && "$DOCKER" image inspect "$TAG" >/dev/null 2>&1; then
    "$DOCKER" tag "$TAG" "$REPO:latest"
    echo "image $TAG already present, skipping"
    exit 0
fi

for tool in debootstrap tar; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is required (apt-get install $tool)" >&2; exit 1; }
done
if [[ $(id -u) != 0 ]]; then
    echo "build.sh: debootstrap needs root; run as root (or via sudo)" >&2
    exit 1
fi

START=$(date +%s)
ROOTFS="$(mktemp -d "$WORKDIR/bosun-rootfs.XXXXXX")"
cleanup() { rm -rf --one-file-system "$ROOTFS"; }
trap cleanup EXIT

echo "building $TAG: debootstrap $SUITE ($PACKAGES) into $ROOTFS ..."
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || {
    echo "build.sh: debootstrap failed; last lines of $ROOTFS.log:" >&2; tail -n 20 "$ROOTFS.log" >&2; exit 1; }
rm -f "$ROOTFS.log"

# The unprivileged user commands run as by default (the provider usually picks the workspace owner's uid).
chroot "$ROOTFS" groupadd --gid "$SANDBOX_GID" sandbox
chroot "$ROOTFS" useradd --uid "$SANDBOX_UID" --gid "$SANDBOX_GID" --home-dir /tmp/home --no-create-home \
    --shell /bin/bash sandbox
# Mount points: the workspace, and the read-only tool server.
mkdir -p "$ROOTFS/workspace" "$ROOTFS/opt/bosun"
chmod 0777 "$ROOTFS/workspace"
# The workspace may belong to another uid than the one commands run as: let git work there anyway.
chroot "$ROOTFS" git config --system safe.directory '*'
# Nothing in the image needs set-id bits (no-new-privileges ignores them anyway): remove them.
find "$ROOTFS" -xdev -type f \( -perm -4000 -o -perm -2000 \) -exec chmod ug-s {} +
# Smaller image: caches, docs, locales other than C.
rm -rf "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/usr/share/doc/* \
    "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/var/log/*
find "$ROOTFS/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} + 2>/dev/null || true

tar --numeric-owner --xattrs -C "$ROOTFS" -c . | "$DOCKER" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV HOME=/tmp/home' \
    --change 'WORKDIR /workspace' \
    --change "USER $SANDBOX_UID:$SANDBOX_GID" \
    --change 'CMD ["sleep", "infinity"]' \
    --message "bosun sandbox image, recipe $HASH" \
    - "$TAG" >/dev/null
"$DOCKER" tag "$TAG" "$REPO:latest"
echo "built $TAG in $(( $(date +%s) - START )) s"
