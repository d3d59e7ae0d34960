#!/usr/bin/env bash
# A venv of PYTHON in DIR with pip and the given requirements, none of it byte-compiled:
#
#   bash scripts/make_venv.sh PYTHON DIR [pip install arguments ...]
#
# ensurepip byte-compiles pip (~6 CPU-s a venv, and the suite makes ten), so where PYTHON's own pip
# can install into another interpreter (pip >= 22.3: --python) the venv is made without it and that
# pip installs pip with the rest; a PYTHON without such a pip (a system Python with no pip, or an
# older one) makes the venv with ensurepip, as `python -m venv` does.  Python compiles what is
# imported when it is first imported.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash scripts/make_venv.sh PYTHON DIR [pip install arguments ...]" >&2; exit 2; }
PY="$1"
DIR="$2"
shift 2
PIP_OPTS=(-q --disable-pip-version-check --no-compile)
if "$PY" -c 'import sys, importlib.metadata as m
sys.exit(tuple(int(p) for p in m.version("pip").split(".")[:2]) < (22, 3))' 2>/dev/null; then
    "$PY" -m venv --without-pip "$DIR"
    "$PY" -m pip --python "$DIR/bin/python" install "${PIP_OPTS[@]}" pip "$@"
else
    "$PY" -m venv "$DIR"
    [ $# -eq 0 ] || "$DIR/bin/python" -m pip install "${PIP_OPTS[@]}" "$@"
fi
