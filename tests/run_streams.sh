#!/usr/bin/env bash
# `make test` after the static checks: the test suite as two streams at once.
#
# Why: on a 2-core machine the Kubernetes tests spend most of their time waiting (for pods to be
# scheduled, images to be unpacked, JVMs in CPU-limited containers to start), and a cold machine
# spends ~10 minutes compiling the Kubernetes tools and building the image, which only they need.
# So one stream builds those and runs the tests marked `k8s` (the operator's FlinkJobs on YARN among them: they need
# the API server, and this stream starts a Hadoop cluster and a Kafka broker for them) and, for balance, those named
# in KUBERNETES_STREAM below; the other resolves the Hadoop jars and Flink's client and runs everything else (unit,
# local end to end, YARN/HDFS, Flink's CLI). The two take about as long.
# Then the stream that ends first runs the PySpark 3.5 lane: the unit tests and the tests marked
# `spark35` again, in a virtualenv with the oldest PySpark jobcluster supports (made by `make
# venv-spark35` while the first tests run). Which stream ends first depends on the cache: on a cold
# machine the Kubernetes tools' compile makes the `kubernetes` stream the longer one, on a warm one
# the `others` stream is.
# Both resolve the Kafka test broker and Spark's Kafka connector (tests/infra/kafka) and install the S3
# test server (tests/infra/s3), flock'd and cached: one stream waits for the other's build, a warm cache
# costs nothing.
# Each stream starts its own test clusters (the Kubernetes node in one, a Hadoop cluster in each
# that needs one); nothing of one stream is visible to the other's checks.
#
# Each line is prefixed with its stream's name; each stream ends with pytest's own summary. The
# exit code is 0 only when both streams passed. Extra arguments go to both pytest runs.
# Environment: PY (the test virtualenv's python), PY_SPARK35 (the 3.5 lane's), JOBCLUSTER_CORPUS (the corpus),
# JOBCLUSTER_CACHE.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
PY_SPARK35=${PY_SPARK35:-.venv-pyspark3.5/bin/python}
pytest=("$PY" -m pytest -ra --durations=15 "$@")
pytest_spark35=("$PY_SPARK35" -m pytest -ra --durations=5 "$@")
# the tests of the first stream; the second runs all others. Besides the Kubernetes tests, the first takes the
# object-storage test of the YARN target (markers s3 and hadoop, ~4 min), the YARN clients behind a firewall (marker
# firewall, ~4.5 min) and every test on the Kerberized cluster (marker kerberos, ~12 min: the operator's FlinkJobs on
# Kerberized YARN need this stream's API server, so the Kerberized cluster starts in this stream only), so that the two
# streams, the 3.5 lane included, end together (~64 min each, warm). Both start the S3 server, a Hadoop cluster and a
# Kafka broker.
KUBERNETES_STREAM="k8s or (s3 and hadoop) or firewall or kerberos"

# The 3.5 lane's virtualenv, made by one stream at a time (the other may be making it).
venv_spark35() {
    flock "$results/venv-spark35.lock" make --no-print-directory venv-spark35 >>"$results/venv-spark35.log" 2>&1
}

# The PySpark 3.5 lane, run by the stream that ends first (mkdir is atomic: one of them takes it).
spark35_lane() {
    mkdir "$results/spark35-lane" 2>/dev/null || return 0
    if ! venv_spark35; then
        echo "the PySpark 3.5 lane's virtualenv (make venv-spark35) failed:"
        tail -n 20 "$results/venv-spark35.log"
        return 1
    fi
    echo "the PySpark 3.5 lane: $("$PY_SPARK35" -m jobcluster --version)"
    "${pytest_spark35[@]}" tests/unit && "${pytest_spark35[@]}" -m spark35 tests/e2e tests/integration
}

kubernetes() {
    # compiling the node's tools is the longest step of a cold run (CPU), so it starts first; the image,
    # the Hadoop jars and the Kafka broker (mostly downloads) are made while it runs
    bash tests/infra/k8s/build.sh &
    local tools=$!
    bash tests/infra/image/build.sh &
    local image=$!
    local made=0
    bash tests/infra/hadoop/build.sh && bash tests/infra/kafka/build.sh && bash tests/infra/s3/build.sh >/dev/null || made=1
    wait "$tools" || made=1
    wait "$image" || made=1
    local passed=1
    [[ $made == 0 ]] && "${pytest[@]}" --junitxml="$results/kubernetes.xml" -m "$KUBERNETES_STREAM" && passed=0
    spark35_lane || passed=1
    return $passed
}

others() {
    venv_spark35 &  # while the first tests run; the lane waits for it
    local passed=1
    bash tests/infra/hadoop/build.sh && bash tests/infra/kafka/build.sh && bash tests/infra/s3/build.sh >/dev/null \
        && bash tests/infra/flink/build.sh \
        && "${pytest[@]}" --junitxml="$results/others.xml" -m "not ($KUBERNETES_STREAM)" && passed=0
    spark35_lane || passed=1
    wait
    return $passed
}

# run <name> <function>: the function's output, each line prefixed with [name] (and kept in <name>.log);
# its exit code in <name>.rc
run() {
    local start=$SECONDS
    "$2" 2>&1 | sed -u "s/^/[$1] /" | tee "$results/$1.log"
    local code=${PIPESTATUS[0]}
    echo "$code $((SECONDS - start))" >"$results/$1.rc"
}

# failures <name>: a failed stream's failed tests again (the streams interleave, the end of a log is what
# is read first), or, when pytest never ran, the stream's last lines
failures() {
    local log="$results/$1.log"
    grep -E "^\[$1\] (FAILED|ERROR)[ :]" "$log" | cut -c1-400 >"$log.failed"
    if [[ -s $log.failed ]]; then cat "$log.failed"; else tail -n 20 "$log"; fi
}

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
run kubernetes kubernetes &
run others others &
wait

# where the time went, for whoever plans CI's budget: the test files that took longest, by stream. Printed before the
# verdicts, so that the end of the log (what is read first) says what failed.
"$PY" -m tests.support.test_times "$results"/*.xml || true

status=0
for name in kubernetes others; do
    read -r code seconds <"$results/$name.rc" || { code=1 seconds=?; }
    if [[ $code == 0 ]]; then verdict=passed; else verdict="FAILED (exit $code)"; status=1; fi
    echo "stream $name: $verdict after $seconds s"
    [[ $code == 0 ]] || failures "$name"
done
exit $status
