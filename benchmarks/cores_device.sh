#!/usr/bin/env bash
# Issue 68's and 80's many-core tables, on a lent 16-core machine that reaches no package index:
# the runtime wheels travel in .whl (pip download ... -d .whl, CPython 3.12, manylinux) and the core
# is built here for that CPython (kafkarec/_core.cpython-312-*.so); the machine's own pyarrow and
# numpy are used.  docs/performance.md, "Sixteen cores", gives the command that prepared and ran it.
#
#     bash benchmarks/cores_device.sh            # OUT=folder for the tables (default /tmp/cores-out)
#
# PARTS/RECORDS/ONE_RECORDS/THREADS/REPEATS shrink it for a trial run on a small machine.
set -euo pipefail
OUT=${OUT:-/tmp/cores-out}
PARTS=${PARTS:-16}
RECORDS=${RECORDS:-400000}
ONE_RECORDS=${ONE_RECORDS:-3000000}
THREADS=${THREADS:-1,2,4,8,16}
REPEATS=${REPEATS:-3}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
fi
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
python3 -c "import sys, pyarrow, numpy, duckdb, kafkarec._core; print(sys.version.split()[0], 'pyarrow', pyarrow.__version__, 'numpy', numpy.__version__, 'duckdb', duckdb.__version__)"
{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|L3' || true; free -g | head -2; } | tee "$OUT/machine.txt"
python3 benchmarks/bench_cores.py --partitions "$PARTS" --records "$RECORDS" --workdir /tmp/cores-many \
    --threads "$THREADS" --repeats "$REPEATS" --only reader,procs,pyarrow,duckdb,consumer \
    --json "$OUT/cores_many.json" 2>&1 | tee "$OUT/cores_many.txt"
python3 benchmarks/bench_cores.py --partitions 1 --records "$ONE_RECORDS" --values json --workdir /tmp/cores-one \
    --threads "$THREADS" --repeats 5 --only reader,procs,pyarrow,duckdb \
    --json "$OUT/cores_one.json" 2>&1 | tee "$OUT/cores_one.txt"
# the read's tail on every thread (docs/performance.md, "The read's tail cut for its threads"): one
# read's timeline over the many partitions, and the tail's cut against whole windows on both shapes
python3 benchmarks/cores_timeline.py /tmp/cores-many --threads 16 --quick --repeats 1 2>&1 | tee "$OUT/timeline_many.txt"
python3 benchmarks/bench_tail.py /tmp/cores-many/log --threads 16 --repeats 10 2>&1 | tee "$OUT/tail_many.txt"
python3 benchmarks/bench_tail.py /tmp/cores-one/log --threads 16 --repeats 10 2>&1 | tee "$OUT/tail_one.txt"
