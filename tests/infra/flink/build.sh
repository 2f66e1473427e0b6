#!/usr/bin/env bash
# Resolve Flink's client jars (CliFrontend, RestClusterClient) of each pinned release once per pom.
#
# Why: tests/integration/flink runs Flink's own CLI and REST client against a
# jobcluster REST API; Maven Central has them, a Flink distribution (~500 MB)
# is not needed. The releases are listed in `versions` (next to this file);
# pom.xml is shared, build.sh sets its flink.version. Layout, like tests/infra/hadoop/build.sh:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/flink-<version>/
#       lib/*.jar  classpath.txt (one line, ':'-separated)
#
# A complete cache dir built from the same pom.xml is reused without Maven or
# network; builds go to a temp dir renamed into place; concurrent runs wait (flock, one lock per version).
#
# Usage: build.sh [VERSION ...] [-- MVN_ARG ...]   (no VERSION: every version in `versions`)
# stdout: one line per version, in the order asked, the path of its classpath.txt.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/pom.xml"
pom_sum=$(sha256sum "$pom" | cut -d' ' -f1)
cache_root=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}

versions=()
while (($#)); do
    if [[ $1 == -- ]]; then
        shift
        break
    fi
    versions+=("$1")
    shift
done
if ((${#versions[@]} == 0)); then
    mapfile -t versions < <(grep -v '^\s*\(#\|$\)' "$here/versions")
fi

# resolve VERSION MVN_ARG...: prints the path of VERSION's classpath.txt (in a subshell: its lock and trap are its own)
resolve() (
    local version=$1
    shift
    local dest="$cache_root/flink-$version"
    is_complete() {
        [[ -s $dest/classpath.txt && -d $dest/lib && "$(cat "$dest/.complete" 2>/dev/null)" == "$pom_sum" ]]
    }
    if is_complete; then
        echo "$dest/classpath.txt"
        exit 0
    fi
    local mvn=${MVN:-$(command -v mvn || true)}
    if [[ -z $mvn || ! -x $mvn ]]; then
        echo "build.sh: 'mvn' not found, and Flink $version's client jars are not resolved yet ($dest); install Apache Maven >= 3.6 (Debian: apt-get install maven) or set MVN" >&2
        exit 2
    fi
    mkdir -p "$cache_root"
    exec 9>"$cache_root/flink-$version.lock"
    flock 9
    if is_complete; then
        echo "$dest/classpath.txt"
        exit 0
    fi
    tmp=$(mktemp -d "$cache_root/flink-$version.tmp.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    echo "build.sh: resolving Flink $version's client jars from Maven Central into $dest (cold: ~1 min)" >&2
    "$mvn" -B -ntp -C -f "$pom" -Dflink.version="$version" -Dflink.cache.dir="$tmp" -Dflink.classpath.prefix="$dest/lib" "$@" package 1>&2
    mv "$tmp/classpath.txt.tmp" "$tmp/classpath.txt"
    compgen -G "$tmp/lib/flink-clients-$version.jar" >/dev/null || { echo "build.sh: flink-clients-$version.jar missing after the build" >&2; exit 1; }
    echo "$pom_sum" >"$tmp/.complete"
    rm -rf "$dest"
    mv "$tmp" "$dest"
    trap - EXIT
    echo "$dest/classpath.txt"
)

for version in "${versions[@]}"; do
    resolve "$version" "$@"
done
