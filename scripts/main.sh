#!/usr/bin/env bash
# The main job, as a user runs kafkarec on Spark:
#  1. build the wheelhouse: kafkarec's wheel plus its runtime dependency wheels, none of an
#     extra's, as the job decodes a local log and ships only those (scripts/wheelhouse.sh
#     --extras none; nothing is rebuilt when no source changed);
#  2. a "bare" Python holding only pyspark, pyarrow and pandas (made once, in
#     .cache/, while step 1 compiles; scripts/bare_python.sh) - the driver and every executor run it,
#     so kafkarec and its dependencies come only from the shipped wheels;
#  3. write a sample Kafka log directory to sample-data/ with kafkarec's builder
#     (imported from the wheel by the bare Python);
#  4. spark-submit --py-files wheelhouse/<kafkarec wheel> scripts/spark_job.py in
#     local mode, from an empty working folder: Parquet into out/, a summary per
#     topic/partition on stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
TAG="$("$PY" -c 'import sys; print(sys.implementation.cache_tag)')"
step() { printf '%s kafkarec main job: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# Steps 1 and 2 run side by side: compiling the core keeps one core busy, installing pyspark
# waits on the disk and the network (a first run: ~17 s saved).
mkdir -p "$ROOT/.cache"
BARE_OUT="$ROOT/.cache/main-job-bare.out"
BARE_LOG="$ROOT/.cache/main-job-bare.log"
step "1/4 wheelhouse (kafkarec's wheel and its runtime dependencies; built once per source change)"
step "2/4 bare Python with only pyspark, pyarrow and pandas (made once), beside step 1"
bash scripts/bare_python.sh "$ROOT/.cache/bare-$TAG" --python "$PY" >"$BARE_OUT" 2>"$BARE_LOG" &
BARE_PID=$!
trap 'kill "$BARE_PID" 2>/dev/null || true' EXIT
WHEEL="$(bash scripts/wheelhouse.sh wheelhouse --python "$PY" --extras none)"
if ! wait "$BARE_PID"; then
    cat "$BARE_LOG" >&2
    echo "kafkarec main job: the bare Python could not be made (its log above)" >&2
    exit 1
fi
trap - EXIT
cat "$BARE_LOG" >&2
BARE="$(cat "$BARE_OUT")"
BARE_BIN="$(dirname "$BARE")"
export KAFKAREC_NATIVE_CACHE="${KAFKAREC_NATIVE_CACHE:-$ROOT/.cache/native}"
# An empty working folder: no source tree on any Python path.
RUN="$ROOT/.cache/main-job"
mkdir -p "$RUN"
cd "$RUN"
step "3/4 sample log directory in sample-data/"
PYTHONPATH="$WHEEL" "$BARE" -m kafkarec.sample "$ROOT/sample-data" --clean
rm -rf "$ROOT/out"
# Loopback binding, the bare Python for driver and workers, 4g of driver memory.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="$BARE" PYSPARK_DRIVER_PYTHON="$BARE"
unset PYTHONPATH
# Spark logs warnings only (KAFKAREC_SPARK_LOG_LEVEL=info shows the rest).
LOG_OPTS="-Dlog4j2.configurationFile=file:$ROOT/scripts/spark-log4j2.properties"
LOG_OPTS="$LOG_OPTS -Dkafkarec.spark.log.level=${KAFKAREC_SPARK_LOG_LEVEL:-warn}"
step "4/4 spark-submit --py-files $(basename "$WHEEL") scripts/spark_job.py (local[2])"
"$BARE_BIN/spark-submit" --master "local[2]" --driver-memory 4g \
    --driver-java-options "$LOG_OPTS" \
    --conf spark.ui.enabled=false --conf spark.driver.bindAddress=127.0.0.1 \
    --conf spark.driver.host=127.0.0.1 \
    --py-files "$WHEEL" "$ROOT/scripts/spark_job.py" "$ROOT/sample-data" "$ROOT/out"
