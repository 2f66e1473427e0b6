#!/usr/bin/env bash
# The S3-compatible server of the object-storage tests: moto's server, in a virtualenv of its own.
#
# Why: s3a:// input, output, checkpoints and savepoints are tested against a real S3 API (moto implements
# it in memory, buckets and multipart uploads included), started by the tests on this machine. moto pins
# python-dateutil below 3, which the kubernetes client of the test virtualenv refuses, so it lives apart:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/moto-<version>/bin/moto_server
#
# A complete virtualenv of the same version is reused as is (no network). Safe to run concurrently
# (flock) and after an interrupted build (a virtualenv cannot be moved, so it is built in place and
# marked complete last; one without the mark is built again).
#
# stdout: exactly one line, the path of moto_server. Progress goes to stderr.
# Environment: JOBCLUSTER_CACHE (cache root), PYTHON (default python3.11).
set -euo pipefail

version=5.2.5
python=${PYTHON:-python3.11}
cache_root=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}
dest="$cache_root/moto-$version"

if [[ -x $dest/bin/moto_server && -f $dest/.complete ]]; then
    echo "$dest/bin/moto_server"
    exit 0
fi
mkdir -p "$cache_root"
exec 9>"$cache_root/moto-$version.lock"
flock 9
if [[ -x $dest/bin/moto_server && -f $dest/.complete ]]; then
    echo "$dest/bin/moto_server"
    exit 0
fi
start=$SECONDS
echo "build.sh: installing moto $version's S3 server into $dest" >&2
rm -rf "$dest"
"$python" -m venv "$dest"
trap 'rm -rf "$dest"' EXIT
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$version" 1>&2
touch "$dest/.complete"
trap - EXIT
echo "build.sh: moto $version installed in $((SECONDS - start)) s" >&2
echo "$dest/bin/moto_server"
