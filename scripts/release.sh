#!/usr/bin/env bash
# A release: kafkarec's sdist plus a manylinux wheel (auditwheel-repaired) for
# every CPython from 3.9 to 3.13 found on this machine, with the dependency
# wheels each of them needs - one folder that pip and spark_udfs.register can
# both use, whatever the executors' Python:
#
#   bash scripts/release.sh DIR [--python PATH ...] [--reuse FROM ...]
#
# Without --python, each of python3.9 ... python3.13 found on PATH (or under
# pyenv) is used.  Each wheel is built by scripts/wheelhouse.sh (a cached build
# environment per Python; nothing is rebuilt when no source changed), the first
# Python's by pip from the sdist (wheelhouse.sh --sdist: the sdist builds from
# source as a user's pip builds it), then installed into a clean venv of its own
# Python, which decodes a batch; the release fails if any does not.  --reuse FROM:
# a wheelhouse (scripts/wheelhouse.sh's) whose wheels of the same sources are
# taken for a Python other than the first instead of building them again (the
# test suite's cp311/cp312 wheelhouses: tests/test_release.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR=""
PYTHONS=()
REUSE=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) PYTHONS+=("$2"); shift 2 ;;
        --python=*) PYTHONS+=("${1#--python=}"); shift ;;
        --reuse) REUSE+=(--reuse "$2"); shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        -*) echo "release.sh: unknown option $1" >&2; exit 2 ;;
        *) DIR="$1"; shift ;;
    esac
done
[ -n "$DIR" ] || { echo "usage: bash scripts/release.sh DIR [--python PATH ...]" >&2; exit 2; }
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

if [ ${#PYTHONS[@]} -eq 0 ]; then
    for minor in 9 10 11 12 13; do
        found=""
        for cand in "python3.$minor" "$HOME"/.pyenv/versions/3.$minor.*/bin/python3.$minor; do
            if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import venv' >/dev/null 2>&1; then
                found="$(command -v "$cand")"; break
            fi
        done
        [ -n "$found" ] && PYTHONS+=("$found")
    done
fi
[ ${#PYTHONS[@]} -gt 0 ] || { echo "release.sh: no CPython 3.9-3.13 found" >&2; exit 2; }

VERSION="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ROOT/kafkarec/__init__.py")"
echo "kafkarec $VERSION: building for ${#PYTHONS[@]} Pythons into $DIR" >&2

# The first Python's wheel is built by pip from the sdist, as a user who installs the sdist has
# it built (so the sdist is proven to build from source, and the core compiled once for it); the
# others in the checkout, sharing its build/ and Cython's C.
WHEELS=("$(bash "$ROOT/scripts/wheelhouse.sh" "$DIR" --python "${PYTHONS[0]}" --sdist)")
SDIST="$DIR/kafkarec-$VERSION.tar.gz"
[ -f "$SDIST" ] || { echo "release.sh: wheelhouse.sh --sdist left no $SDIST" >&2; exit 1; }
for py in "${PYTHONS[@]:1}"; do
    WHEELS+=("$(bash "$ROOT/scripts/wheelhouse.sh" "$DIR" --python "$py" "${REUSE[@]}")")
done

# Each wheel into a clean venv of its own Python: import, build and decode a batch.
CHECK="$ROOT/.cache/release-check"
check() {   # check PYTHON WHEEL
    local py="$1" name
    name="$(basename "$2")"
    local venv="$CHECK/$name"
    rm -rf "$venv"
    # without a pip of its own (ensurepip: ~6 CPU-s a venv); its Python's pip installs into it,
    # without byte-compiling what the check never imports (--no-compile)
    "$py" -m venv --without-pip "$venv"
    "$py" -m pip --python "$venv/bin/python" install -q --disable-pip-version-check --no-compile --no-index \
        --find-links "$DIR" "$2" \
        > "$CHECK/$name.log" 2>&1 \
        || { cat "$CHECK/$name.log" >&2; echo "release.sh: $name does not install" >&2; exit 1; }
    (cd "$CHECK" && "$venv/bin/python" - "$name" <<'PY') || { echo "release.sh: $name does not work in a clean venv" >&2; exit 1; }
import sys
import kafkarec
batch = kafkarec.build_batch([b"v", b"w"], keys=[b"k", None], base_offset=42,
                             compression=kafkarec.Compression.LZ4)
records = [(r.offset, r.key, r.value) for b in kafkarec.iter_batches(batch) for r in b]
assert records == [(42, b"k", b"v"), (43, None, b"w")], records
print(f"  {sys.argv[1]}: kafkarec {kafkarec.__version__} decodes", file=sys.stderr)
PY
}
rm -rf "$CHECK"
mkdir -p "$CHECK"
i=0
for py in "${PYTHONS[@]}"; do
    check "$py" "${WHEELS[$i]}"
    i=$((i + 1))
done
echo "  $(basename "$SDIST"): built from source by pip into $(basename "${WHEELS[0]}"), which decodes" >&2
rm -rf "$CHECK"
echo "release $VERSION in $DIR:" >&2
(cd "$DIR" && ls -1 kafkarec-*) >&2
