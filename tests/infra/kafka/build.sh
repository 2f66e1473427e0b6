#!/usr/bin/env bash
# Resolve the pinned Kafka broker and Spark's Kafka connector for the tests, once per pom pair.
#
# Why: the streaming tests check exactly-once against a real Kafka broker, and
# the programs read it through Spark's own connector. Apache's release
# tarballs are not reachable from CI; Maven Central is. Two poms next to this
# script name what is needed, and Maven copies the jars into a cache outside
# the repository:
#
#   ${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}/kafka-<version>/
#       lib/*.jar             the broker (kafka_2.13) and its runtime deps  (pom.xml)
#       classpath.txt         one line: those jars in Maven's order, ':'-separated
#       spark-connector/*.jar spark-sql-kafka-0-10 for pyspark's Spark version and
#                             what of its deps pyspark lacks  (spark-connector/pom.xml)
#
# A complete cache dir built from the same two poms is reused as is (no Maven,
# no network). Safe to run concurrently (flock) and after an interrupted build
# (builds into a temp dir, renamed into place when complete).
#
# stdout: exactly one line, the path of classpath.txt (spark-connector/ is its
# sibling). Progress goes to stderr. Arguments are passed to both mvn runs.
# Environment: JOBCLUSTER_CACHE (cache root), MVN (maven binary), JAVA_HOME.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/pom.xml"
connector_pom="$here/spark-connector/pom.xml"

version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n1)
spark_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$connector_pom" | head -n1)
scala=$(sed -n 's:.*<scala.binary.version>\(.*\)</scala.binary.version>.*:\1:p' "$connector_pom" | head -n1)
if [[ -z $version || -z $spark_version || -z $scala ]]; then
    echo "build.sh: cannot read <kafka.version> from $pom or <spark.version>/<scala.binary.version> from $connector_pom" >&2
    exit 2
fi
# Either pom changing makes the cache stale.
pom_sum=$(cat "$pom" "$connector_pom" | sha256sum | cut -d' ' -f1)

cache_root=${JOBCLUSTER_CACHE:-$HOME/.cache/jobcluster}
dest="$cache_root/kafka-$version"

is_complete() {
    [[ -s $dest/classpath.txt && -d $dest/lib && -d $dest/spark-connector ]] || return 1
    [[ "$(cat "$dest/.complete" 2>/dev/null)" == "$pom_sum" ]]
}

if is_complete; then
    echo "$dest/classpath.txt"
    exit 0
fi

mvn=${MVN:-$(command -v mvn || true)}
if [[ -z $mvn || ! -x $mvn ]]; then
    cat >&2 <<EOF
build.sh: 'mvn' not found, and the Kafka $version test broker's jars are not
  resolved yet ($dest).
Install Apache Maven >= 3.6 (Debian: apt-get install maven) and put it on PATH,
or set MVN=/path/to/mvn.
EOF
    exit 2
fi
if ! command -v java >/dev/null && [[ ! -x ${JAVA_HOME:-/nonexistent}/bin/java ]]; then
    echo "build.sh: 'java' not found; the Kafka test broker needs JDK 17, as make does (Debian: apt-get install openjdk-17-jdk-headless)" >&2
    exit 2
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/kafka-$version.lock"
if ! flock -n 9; then
    echo "build.sh: another build of kafka-$version is running; waiting for it" >&2
    flock 9
fi
if is_complete; then
    echo "$dest/classpath.txt"
    exit 0
fi

tmp=$(mktemp -d "$cache_root/kafka-$version.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
echo "build.sh: resolving the Kafka $version broker and Spark $spark_version's Kafka connector from Maven Central into $dest (cold: ~30 s)" >&2
# copy-dependencies writes the jars into $tmp/lib; build-classpath names them
# under their final home ($dest/lib) so the file is valid once renamed.
"$mvn" -B -ntp -C -f "$pom" \
    -Dkafka.cache.dir="$tmp" \
    -Dkafka.classpath.prefix="$dest/lib" \
    "$@" package 1>&2
mv "$tmp/classpath.txt.tmp" "$tmp/classpath.txt"
"$mvn" -B -ntp -C -f "$connector_pom" -Dconnector.dir="$tmp/spark-connector" "$@" package 1>&2

# Sanity: the broker, and exactly the connector's four jars (a fifth one is a
# dependency pyspark already ships, which the pom's exclusions missed).
compgen -G "$tmp/lib/kafka_2.13-$version.jar" >/dev/null || { echo "build.sh: kafka_2.13-$version.jar missing after the build" >&2; exit 1; }
for a in "spark-sql-kafka-0-10_$scala-$spark_version" "spark-token-provider-kafka-0-10_$scala-$spark_version" "kafka-clients-*" "commons-pool2-*"; do
    compgen -G "$tmp/spark-connector/$a.jar" >/dev/null || { echo "build.sh: $a.jar missing from the connector after the build" >&2; exit 1; }
done
if [[ $(ls "$tmp/spark-connector" | wc -l) != 4 ]]; then
    echo "build.sh: the connector resolved more than its 4 jars: $(ls "$tmp/spark-connector" | tr '\n' ' ')" >&2
    exit 1
fi

echo "$pom_sum" >"$tmp/.complete"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "build.sh: resolved kafka-$version ($(ls "$dest/lib" | wc -l) jars) and Spark's connector ($(ls "$dest/spark-connector" | tr '\n' ' ')) in $((SECONDS - start)) s" >&2
echo "$dest/classpath.txt"
