#!/usr/bin/env bash
# Resolve the pinned Hadoop server jars for the test clusters, once per pom.
#
# Why: the integration tests run the real NameNode, DataNode, ResourceManager
# and NodeManager. Apache's release tarballs are not reachable from CI; Maven
# Central is. So pom.xml (next to this script) names the server artifacts of
# one Hadoop release and Maven copies them, with everything they need at
# runtime, into a cache outside the repository:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/hadoop-<version>/
#       lib/*.jar        the jars
#       classpath.txt    one line: those jars in Maven's order, ':'-separated
#
# A complete cache dir built from the same pom.xml is reused as is (no Maven,
# no network). Safe to run concurrently (flock) and after an interrupted build
# (builds into a temp dir, renamed into place when complete).
#
# stdout: exactly one line, the path of classpath.txt. Progress goes to stderr.
# Arguments are passed to mvn (e.g. -Dmaven.repo.local=/tmp/m2 -o).
# Environment: JOBCLUSTER_CACHE (cache root), MVN (maven binary), JAVA_HOME.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/pom.xml"

version=$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$pom" | head -n1)
if [[ -z $version ]]; then
    echo "build.sh: cannot read <hadoop.version> from $pom" >&2
    exit 2
fi
pom_sum=$(sha256sum "$pom" | cut -d' ' -f1)

cache_root=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}
dest="$cache_root/hadoop-$version"

is_complete() {
    [[ -s $dest/classpath.txt && -d $dest/lib ]] || return 1
    [[ "$(cat "$dest/.complete" 2>/dev/null)" == "$pom_sum" ]]
}

if is_complete; then
    echo "$dest/classpath.txt"
    exit 0
fi

mvn=${MVN:-$(command -v mvn || true)}
if [[ -z $mvn || ! -x $mvn ]]; then
    cat >&2 <<EOF
build.sh: 'mvn' not found, and the Hadoop $version test-cluster jars are not
  resolved yet ($dest).
Install Apache Maven >= 3.6 (Debian: apt-get install maven) and put it on PATH,
or set MVN=/path/to/mvn.
EOF
    exit 2
fi
if ! command -v java >/dev/null && [[ ! -x ${JAVA_HOME:-/nonexistent}/bin/java ]]; then
    echo "build.sh: 'java' not found; the Hadoop test cluster needs JDK 17, as make does (Debian: apt-get install openjdk-17-jdk-headless)" >&2
    exit 2
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/hadoop-$version.lock"
if ! flock -n 9; then
    echo "build.sh: another build of hadoop-$version is running; waiting for it" >&2
    flock 9
fi
if is_complete; then
    echo "$dest/classpath.txt"
    exit 0
fi

tmp=$(mktemp -d "$cache_root/hadoop-$version.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
echo "build.sh: resolving Hadoop $version server jars from Maven Central into $dest (cold: ~1 min)" >&2
# copy-dependencies writes the jars into $tmp/lib; build-classpath names them
# under their final home ($dest/lib) so the file is valid once renamed.
"$mvn" -B -ntp -C -f "$pom" \
    -Dhadoop.cache.dir="$tmp" \
    -Dhadoop.classpath.prefix="$dest/lib" \
    "$@" package 1>&2
mv "$tmp/classpath.txt.tmp" "$tmp/classpath.txt"
# Sanity: the jars of the four daemons and of HttpFS must be there.
for a in hadoop-hdfs hadoop-yarn-server-resourcemanager hadoop-yarn-server-nodemanager hadoop-common hadoop-hdfs-httpfs; do
    compgen -G "$tmp/lib/$a-$version.jar" >/dev/null || { echo "build.sh: $a-$version.jar missing after the build" >&2; exit 1; }
done
echo "$pom_sum" >"$tmp/.complete"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "build.sh: resolved hadoop-$version ($(ls "$dest/lib" | wc -l) jars) in $((SECONDS - start)) s" >&2
echo "$dest/classpath.txt"
