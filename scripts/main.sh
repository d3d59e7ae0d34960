#!/usr/bin/env bash
# Set everything up and run the main job: build the kafkarec wheel into
# wheelhouse/, write a sample Kafka log directory with kafkarec's builder, and
# read it with Spark (local mode) through `spark-submit --py-files <wheel>`:
# Parquet into out/, a summary per topic/partition on stdout.
set -euo pipefail
KAFKAREC_EXTRAS="spark" source "$(dirname "$0")/env.sh"
rm -f wheelhouse/kafkarec-*.whl
"$VPY" -m pip wheel -q --no-deps -w wheelhouse .
WHEEL="$(ls wheelhouse/kafkarec-*.whl | head -n 1)"
"$VPY" -m kafkarec.sample sample-data --clean
rm -rf out
# The Spark settings that matter here: loopback binding (SPARK_LOCAL_IP, set by
# env.sh), the venv's Python for driver and workers, 4g of driver memory.
export PYSPARK_PYTHON="$VPY" PYSPARK_DRIVER_PYTHON="$VPY"
.venv/bin/spark-submit --master "local[2]" --driver-memory 4g \
    --conf spark.ui.enabled=false --conf spark.driver.bindAddress=127.0.0.1 \
    --conf spark.driver.host=127.0.0.1 \
    --py-files "$WHEEL" scripts/spark_job.py sample-data out
