#!/usr/bin/env bash
# A "bare" Spark Python: a venv holding only what a managed Spark cluster gives
# you (pyspark at scripts/versions.sh's pin, pyarrow, pandas<3 and their own dependencies) - no
# kafkarec, no codec libraries.  The main job and the Spark cluster tests run
# executors (and the driver) on it, so everything else must be shipped.
#
#   bash scripts/bare_python.sh DIR [--python PATH] [--lakehouse]    # prints DIR/bin/python
#
# --lakehouse: pyspark at LAKEHOUSE_PYSPARK_VERSION instead (the Spark the Iceberg/Delta runtimes
# load on), for the lakehouse Spark check.
# Made once: a second call with the same interpreter and requirements returns at once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
SPARK_PIN="$PYSPARK_VERSION"
DIR=""
PY="python3"
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY="$2"; shift 2 ;;
        --python=*) PY="${1#--python=}"; shift ;;
        --lakehouse) SPARK_PIN="$LAKEHOUSE_PYSPARK_VERSION"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) DIR="$1"; shift ;;
    esac
done
REQS=("pyspark==$SPARK_PIN" "pyarrow" "pandas<3")
[ -n "$DIR" ] || { echo "usage: bash scripts/bare_python.sh DIR [--python PATH] [--lakehouse]" >&2; exit 2; }
PY_REAL="$(command -v "$PY")" || { echo "no Python at $PY" >&2; exit 2; }
STAMP_WANT="$("$PY_REAL" -c 'import sys; print(sys.version)') | ${REQS[*]} | --no-compile, runtime compiled"
if [ -x "$DIR/bin/python" ] && [ -f "$DIR/.bare-stamp" ] && [ "$(cat "$DIR/.bare-stamp")" = "$STAMP_WANT" ]; then
    echo "$DIR/bin/python"
    exit 0
fi
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9
if ! { [ -x "$DIR/bin/python" ] && [ -f "$DIR/.bare-stamp" ] && [ "$(cat "$DIR/.bare-stamp")" = "$STAMP_WANT" ]; }; then
    rm -rf "$DIR"
    # --no-compile: pip would byte-compile every module of pyspark, pandas and pyarrow, their tests
    # among them (pandas' alone are 1,100 modules).  Their other modules are compiled here: a Python
    # worker Spark starts must connect back within Spark's fixed 10 s (PythonWorkerFactory), and a
    # first worker compiling pyspark and pandas as it imports them, on a loaded machine, may not
    bash "$(dirname "${BASH_SOURCE[0]}")/make_venv.sh" "$PY_REAL" "$DIR" "${REQS[@]}" >&2
    SITE="$("$DIR/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    "$DIR/bin/python" -m compileall -q -j 0 -x '/tests?/|/testing/' "$SITE/pyspark" "$SITE/pandas" "$SITE/pyarrow" >&2 \
        || true     # a module that does not compile fails where it is imported, not here
    printf '%s' "$STAMP_WANT" > "$DIR/.bare-stamp"
fi
# and the pyspark.zip Spark puts first on its Pythons' path (scripts/pyspark_zip_pyc.py: once)
"$DIR/bin/python" "$(dirname "${BASH_SOURCE[0]}")/pyspark_zip_pyc.py" >&2
echo "$DIR/bin/python"
