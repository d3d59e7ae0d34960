# Shared set-up for the project's commands: a virtualenv in .venv with the
# checkout on its path (the Cython core compiled in place), kafkarec's
# dependencies and the extras named in KAFKAREC_EXTRAS.  Safe and fast to run again: when pyproject.toml,
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
    # What pyproject.toml asks for (the build's requirements, the dependencies and
    # the extras), installed by pip; the checkout itself goes on sys.path through a
    # .pth file, with the core compiled in place - a development install without
    # an editable wheel (setuptools' editable modes warn about this layout).
    SPEC="$("$VPY" - "$EXTRAS" <<'PY'
import sys, tomllib
meta = tomllib.load(open("pyproject.toml", "rb"))
wanted = list(meta["build-system"]["requires"]) + list(meta["project"]["dependencies"])
for extra in filter(None, sys.argv[1].split(",")):
    wanted += meta["project"]["optional-dependencies"][extra]
print("\n".join(wanted))
PY
)"
    mapfile -t REQS <<< "$SPEC"
    "$VPY" -m pip uninstall -q -y kafkarec 2>/dev/null || true   # an earlier editable install
    "$VPY" -m pip install -q --disable-pip-version-check "${REQS[@]}"
    build_core
    SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n' "$ROOT" > "$SITE/kafkarec-checkout.pth"
    # the console scripts of [project.scripts]
    "$VPY" - <<'PY'
import os, sys, tomllib
meta = tomllib.load(open("pyproject.toml", "rb"))
bindir = os.path.dirname(sys.executable)
for name, target in meta["project"].get("scripts", {}).items():
    module, func = target.split(":")
    path = os.path.join(bindir, name)
    with open(path, "w") as fh:
        fh.write(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\n"
                 f"sys.exit({func}())\n")
    os.chmod(path, 0o755)
PY
    printf '%s' "$ENV_WANT" > .venv/.kafkarec-env
fi
# Spark binds to loopback here; see shared notes on SPARK_LOCAL_IP.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"
