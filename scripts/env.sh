# Shared set-up for the project's commands: a virtualenv in .venv holding an
# editable install of the checkout (pip install -e ".[extras]", the Cython core
# compiled in place), with the extras named in KAFKAREC_EXTRAS.  Safe and fast to run again: when pyproject.toml,
# setup.py, the extras and the Python are as last time, pip is not run and only
# core sources newer than the compiled core are recompiled.
set -euo pipefail
# The core's compile log (gcc's notes on Cython's generated C) is kept in
# .venv/build.log and shown only when the build fails.
build_core() {
    "$VPY" setup.py -q build_ext --inplace > .venv/build.log 2>&1 || { cat .venv/build.log >&2; return 1; }
}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Every Python started from here compiles a module once and keeps it (in __pycache__, or the venvs'
# folders): with PYTHONDONTWRITEBYTECODE set, as some shells and sandboxes set it, each of the
# suite's thousands of Pythons (the CLI's runs, Spark's workers, the tests' helpers) compiled
# every module it imports anew: ~0.45 CPU-s a Python that imports kafkarec, pyarrow and numpy.
unset PYTHONDONTWRITEBYTECODE
# One compile of the core is ~80 CPU-s (8 MB of Cython's C at -O3), and a fresh checkout compiles
# the same C for the same Python more than once (build/ for the in-place core, then the editable
# install's throwaway build folder; wheelhouses and the release in build/ or their own folders).  Through
# ccache (Debian's package, which scripts/system_deps.sh installs) a repeat takes ~12 s.  Its
# masquerade: a folder first on PATH where each C compiler's name runs ccache, which runs the real
# one, so every Python keeps its own CC and flags, and every build started from here (pip's, the
# wheelhouses', the release's) is cached.  The cache is the checkout's (.cache/ccache) unless
# CCACHE_DIR names another; paths under the checkout are hashed relative to the build's folder, so
# build folders meet.  KAFKAREC_CCACHE=0: no ccache.
if [ "${KAFKAREC_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
    CCACHE_BIN="$ROOT/.cache/ccache-bin"
    mkdir -p "$CCACHE_BIN"
    for compiler in cc gcc x86_64-linux-gnu-gcc clang; do
        if command -v "$compiler" >/dev/null 2>&1 && [ ! -e "$CCACHE_BIN/$compiler" ]; then
            ln -sf "$(command -v ccache)" "$CCACHE_BIN/$compiler"   # -f: two set-ups at once both link
        fi
    done
    case ":$PATH:" in *":$CCACHE_BIN:"*) ;; *) export PATH="$CCACHE_BIN:$PATH" ;; esac
    export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.cache/ccache}"
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
    export CCACHE_NOHASHDIR=1      # the folder a build runs in is not part of what it compiles
fi
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
EXTRAS="${KAFKAREC_EXTRAS:-test}"
ENV_WANT="$(cat pyproject.toml setup.py scripts/env.sh | sha256sum | cut -c1-32) [$EXTRAS] $("$VPY" -c 'import sys; print(sys.version.split()[0])')"
if [ "$(cat .venv/.kafkarec-env 2>/dev/null)" = "$ENV_WANT" ] && "$VPY" -c "import kafkarec" 2>/dev/null; then
    build_core
else
    "$VPY" -m pip install -q --disable-pip-version-check --upgrade pip
    # The build's own requirements first (no build isolation: the compiled core
    # stays in the checkout and is recompiled only when its sources change),
    # then the extras' dependencies and the editable install.
    BUILD_REQS="$("$VPY" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')"
    mapfile -t REQS <<< "$BUILD_REQS"
    "$VPY" -m pip install -q --disable-pip-version-check "${REQS[@]}"
    rm -f "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/kafkarec-checkout.pth"  # an older layout
    # The core's compile (~80 CPU-s, one core) runs beside the dependencies' install (downloads and
    # unpacking, one core): a fresh set-up waits for the longer of the two, not their sum.  The
    # editable install comes last, without dependencies: its compile of the same C then goes
    # through ccache.
    DEPS="$("$VPY" -c '
import sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = [e for e in sys.argv[1].split(",") if e]
unknown = sorted(set(extras) - set(project["optional-dependencies"]))
if unknown:
    sys.exit(f"env.sh: KAFKAREC_EXTRAS names no extra of pyproject.toml: {unknown}")
print("\n".join(project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]))
' "$EXTRAS")"
    mapfile -t DEP_REQS <<< "$DEPS"
    build_core & CORE_PID=$!
    DEPS_RC=0
    # the compile beside reads the build requirements just installed: pip keeps them as they are
    "$VPY" -m pip freeze --all | grep -iE "^($(printf '%s|' "${REQS[@]%%[<>=!~ ;[]*}" | sed 's/|$//'))==" \
        > .venv/build-constraints.txt || true
    # --no-compile: pip would byte-compile every module of every dependency (~70 CPU-s, ray's and
    # pandas' tests among them); Python compiles what the tests import, once, on first import --
    # except what Spark's Python workers import (below)
    "$VPY" -m pip install -q --disable-pip-version-check --no-compile -c .venv/build-constraints.txt \
        "${DEP_REQS[@]}" > .venv/deps.log 2>&1 || DEPS_RC=$?
    wait "$CORE_PID" || { echo "the core's compile failed (.venv/build.log)" >&2; exit 1; }
    [ "$DEPS_RC" -eq 0 ] || { cat .venv/deps.log >&2; exit 1; }
    # a Python worker Spark starts from this Python must connect back within Spark's fixed 10 s
    # (PythonWorkerFactory): what it imports is compiled ahead, their tests left out
    SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    for pkg in pyspark pandas pyarrow; do
        if [ -d "$SITE/$pkg" ]; then
            "$VPY" -m compileall -q -j 0 -x '/tests?/|/testing/' "$SITE/$pkg" > /dev/null || true
        fi
    done
    "$VPY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e ".[$EXTRAS]" \
        > .venv/install.log 2>&1 || { cat .venv/install.log >&2; exit 1; }
    printf '%s' "$ENV_WANT" > .venv/.kafkarec-env
fi
# the pyspark.zip Spark puts first on its Pythons' path, compiled too (scripts/pyspark_zip_pyc.py: once)
"$VPY" scripts/pyspark_zip_pyc.py
# Spark binds to loopback here; see shared notes on SPARK_LOCAL_IP.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
