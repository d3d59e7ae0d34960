# Shared set-up for the project's commands: a virtualenv in .venv with kafkarec
# installed in editable mode (its Cython core compiled in place) plus the extras
# named in KAFKAREC_EXTRAS.  Safe and fast to run again: when pyproject.toml,
# setup.py, the extras and the Python are as last time, pip is not run and only
# core sources newer than the compiled core are recompiled.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
EXTRAS="${KAFKAREC_EXTRAS:-test}"
ENV_WANT="$(cat pyproject.toml setup.py | sha256sum | cut -c1-32) [$EXTRAS] $("$VPY" -c 'import sys; print(sys.version.split()[0])')"
if [ "$(cat .venv/.kafkarec-env 2>/dev/null)" = "$ENV_WANT" ] && "$VPY" -c "import kafkarec" 2>/dev/null; then
    "$VPY" setup.py -q build_ext --inplace
else
    "$VPY" -m pip install -q --disable-pip-version-check --upgrade pip
    # compat: the checkout on sys.path through a .pth, as a plain editable install
    # did (the default "lenient" mode warns about folders named like packages).
    "$VPY" -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]" \
        --config-settings editable_mode=compat
    printf '%s' "$ENV_WANT" > .venv/.kafkarec-env
fi
# Spark binds to loopback here; see shared notes on SPARK_LOCAL_IP.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
