#!/usr/bin/env bash
# Build the project's container image from entrypoints/Dockerfile, once per content hash, as a
# docker-archive for a Kubernetes node's containerd (`ctr images import`).
#
#   build.sh            the job image (the Dockerfile's default target): localhost/jobcluster:<hash>
#   build.sh operator   the FlinkJob operator's image (--target operator, on a base without Java):
#                       localhost/jobcluster-operator:<hash>
#
# Why: the tests have no Docker engine and cannot reach Docker Hub for the Dockerfile's default
# base, but Debian's mirror and PyPI are reachable. So the base image is bootstrapped from Debian's
# packages with mmdebstrap, and the Dockerfile is built on it (BASE_IMAGE) by buildah, daemonless,
# in chroot isolation. All of it lives outside the repository:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/image/jobcluster-<hash>.tar   the archive
#   .../image/storage, .../image/storage.conf                                 buildah's images and layers
#
# <hash> covers the Dockerfile and what it copies (pyproject.toml, README.md, operator/,
# entrypoints/, examples/, less Python's caches as in build.dockerignore) and the base image's recipe. An
# archive for it is reused without buildah. Otherwise the layers kept in the storage make a
# code-only change rebuild just the last few layers, not the dependencies (pyspark). Only the two
# most recently used archives, and the images they hold, are kept. To look into the storage:
#   CONTAINERS_STORAGE_CONF=<cache>/image/storage.conf buildah images --all
#
# stdout: exactly two lines, the image ref (localhost/jobcluster:<hash>, or jobcluster-operator) and the archive.
# Progress and errors go to stderr. Needs root and Debian's packages buildah and mmdebstrap.
# Safe to run concurrently (flock) and after an interruption (the archive is renamed into place).
set -euo pipefail

kind=${1:-job}
[[ $kind == job || $kind == operator ]] || { echo "build.sh: unknown image '$kind' (job or operator)" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dir=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/image
ignorefile=$here/build.dockerignore

# What python:3.11-slim-bookworm gives the Dockerfile, plus the system packages it installs (so
# that step has nothing to do), useradd (passwd: minbase lacks it) and ca-certificates for pip.
# apt stays usable, for the Dockerfile and images built FROM this one.
# shellcheck disable=SC2054,SC2016 # the commas separate --include's packages; the hook's $1 is mmdebstrap's
# The operator's base has no Java (nor procps and tini, which only Spark's scripts need).
packages=python3.11,python3.11-venv,openjdk-17-jre-headless,procps,tini,libgssapi-krb5-2,ca-certificates,passwd
[[ $kind == operator ]] && packages=python3.11,python3.11-venv,ca-certificates,passwd
base_recipe=(
    --mode=root --variant=minbase
    --include="$packages"
    # The mirror may serve a snapshot whose Release files are past their Valid-Until.
    --aptopt='Acquire::Check-Valid-Until "false"'
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    # The container runtime provides these; the host's have no place in an image.
    --customize-hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"'
    bookworm
)
base_mirrors=(
    'deb http://deb.debian.org/debian bookworm main'
    'deb http://deb.debian.org/debian bookworm-updates main'
    'deb http://deb.debian.org/debian-security bookworm-security main'
)
# An image made from a tarball has no environment; the Dockerfile's ENV PATH=...:$PATH needs one.
base_config=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 --cmd /bin/bash)
# The test node's pods share its 2 cores: their JVMs start on the client compiler and the serial collector, as the
# test session's own do (tests/conftest.py). A test-ground setting: the Dockerfile's own base has no such variable.
[[ $kind == job ]] && base_config+=(--env "JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

short_hash() { sha256sum | cut -c1-16; }
name=jobcluster
[[ $kind == operator ]] && name=jobcluster-operator
base=localhost/$name-base:$(printf '%s\n' "${base_recipe[@]}" "${base_mirrors[@]}" "${base_config[@]}" | short_hash)
# tar with fixed times and owners: names, modes and contents count, a mere touch does not.
hash=$({
    echo "$base $kind"
    cat "$ignorefile"
    tar -C "$repo" -cf - --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
        entrypoints examples operator pyproject.toml README.md
} | short_hash)
ref=localhost/$name:$hash
archive=$dir/$name-$hash.tar
target=()
[[ $kind == operator ]] && target=(--target operator --build-arg "OPERATOR_BASE_IMAGE=$base")

reuse_archive() {
    touch "$archive" # most recently used, for the pruning below
    printf '%s\n%s\n' "$ref" "$archive"
    exit 0
}
[[ -f $archive ]] && reuse_archive

need() { # <command> <Debian package>
    command -v "$1" >/dev/null && return
    echo "build.sh: '$1' not found, and the image $ref is not built yet; install it: apt-get install $2" >&2
    exit 2
}
if ((EUID != 0)); then
    echo "build.sh: must run as root (mmdebstrap's root mode; buildah's chroot isolation and overlay storage)" >&2
    exit 2
fi
need buildah buildah
need flock util-linux

mkdir -p "$dir"
exec 9>"$dir/.lock"
if ! flock -n 9; then
    echo "build.sh: another image build is running; waiting for it" >&2
    flock 9
fi
[[ -f $archive ]] && reuse_archive

# From here on everything, buildah's progress and image IDs included, goes to stderr.
exec 3>&1 1>&2

export CONTAINERS_STORAGE_CONF=$dir/storage.conf
if [[ ! -f $CONTAINERS_STORAGE_CONF ]]; then
    # overlay shares layers between images, where vfs copies each whole (~1 GB a build); it needs
    # kernel overlayfs on the cache's file system.
    driver=vfs
    probe=$(mktemp -d "$dir/probe.XXXXXX")
    mkdir "$probe"/{lower,upper,work,merged}
    if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
        umount "$probe/merged"
        driver=overlay
    fi
    rm -rf "$probe"
    # The run root holds mount state that a reboot voids, so it goes on /run's tmpfs, one per cache.
    cat >"$CONTAINERS_STORAGE_CONF.tmp" <<EOF
[storage]
driver = "$driver"
graphroot = "$dir/storage"
runroot = "/run/jobcluster-image-$(echo "$dir" | short_hash)"
EOF
    mv "$CONTAINERS_STORAGE_CONF.tmp" "$CONTAINERS_STORAGE_CONF"
    echo "build.sh: buildah storage in $dir/storage with the $driver driver" >&2
fi

# The lock is held, so any working container is one an interrupted run left behind.
buildah rm --all >/dev/null

work=$(mktemp -d "$dir/work.XXXXXX")
container=
cleanup() {
    [[ -z $container ]] || buildah rm "$container" >/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
    need mmdebstrap mmdebstrap
    echo "build.sh: bootstrapping the base image $base from Debian's packages (~2 min)" >&2
    TMPDIR=$work mmdebstrap "${base_recipe[@]}" "$work/rootfs.tar" "${base_mirrors[@]}" </dev/null
    container=$(buildah from scratch)
    buildah add --quiet "$container" "$work/rootfs.tar" /
    buildah config "${base_config[@]}" "$container"
    buildah commit --quiet --rm --format docker "$container" "$base"
    container=
    rm -f "$work/rootfs.tar"
    echo "build.sh: base image built after $((SECONDS - start)) s" >&2
fi

# pip and Ivy in the build trust what this host trusts (e.g. the CA of a TLS-inspecting proxy): Debian's
# pip reads the system bundle, Debian's Java the keystore made from it; both are mounted over the
# image's for the RUN steps only.
ca_mount=()
for ca_file in /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/java/cacerts; do
    [[ -f $ca_file ]] && ca_mount+=(--volume "$ca_file:$ca_file:ro")
done
echo "build.sh: building $ref (~2 min with the dependencies, ~30 s when only the code changed)" >&2
(cd "$repo" && buildah bud --layers --isolation chroot --pull=never --format docker \
    --ignorefile "$ignorefile" "${ca_mount[@]}" --build-arg "BASE_IMAGE=$base" "${target[@]}" \
    -f entrypoints/Dockerfile -t "$ref" .)

buildah push --quiet "$ref" "docker-archive:$work/image.tar:$ref"
mv "$work/image.tar" "$archive"
echo "build.sh: built and exported $ref in $((SECONDS - start)) s" >&2

# Keep the two most recently used archives of this image, and in the storage only their images and the current
# base; the layers shared with those (the dependencies) stay for the next build.
mapfile -t archives < <(ls -1t "$dir/$name"-[0-9a-f]*.tar)
rm -f -- "${archives[@]:2}"
for image in $(buildah images --format '{{.Name}}:{{.Tag}}'); do
    if [[ $image == localhost/$name:* && ! -f $dir/$name-${image##*:}.tar ]]; then
        buildah rmi "$image" >/dev/null
    fi
done
for image in $(buildah images --format '{{.Name}}:{{.Tag}}'); do
    if [[ $image == localhost/$name-base:* && $image != "$base" ]]; then
        # Fails while a kept image still builds on it; a later run removes it.
        buildah rmi "$image" >/dev/null 2>&1 || true
    fi
done
buildah rmi --prune >/dev/null

printf '%s\n%s\n' "$ref" "$archive" >&3
