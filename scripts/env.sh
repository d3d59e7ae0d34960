# Shared set-up for the project's commands: a virtualenv in .venv with kafkarec
# installed in editable mode (its Cython core compiled in place) plus the extras
# named in KAFKAREC_EXTRAS.  Safe to run again: pip skips what is already there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -m pip install -q --upgrade pip
"$VPY" -m pip install -q -e ".[${KAFKAREC_EXTRAS:-test}]"
# Spark binds to loopback here; see shared notes on SPARK_LOCAL_IP.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
