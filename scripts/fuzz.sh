#!/usr/bin/env bash
# Run one coverage-guided fuzz target for a while:
#   bash scripts/fuzz.sh [--instrumented] TARGET SECONDS [libFuzzer options...]
# TARGET is a file fuzz/fuzz_TARGET.py: batches, arrow, sidefiles, convert, builder, cli, internal, avro,
# protobuf, registry, table, rsm, remote_metadata, properties (against Java's Properties.load: needs a JDK),
# options (the Kafka-source offset options and ISO times against Spark's rules and integer arithmetic),
# config (the Spark data source's option maps and ScanConfig.of's keywords: a config in range or a UsageError),
# indexes (index bytes and base offsets fuzzed: a bounded read against the unbounded read filtered),
# walker (the meta-only walk of offsets and timestamps against the full read),
# threads (LogScan threads 1 against N over small windows), census (find against a filtered full
# read, the census against counting decoded rows), evidence (a restore's evidence documents edited every way:
# decoded into the typed document or a usage error, and a decoded one checked without a raw exception).
# New inputs that reach new code go to fuzz/corpus/TARGET; a crash is written to
# fuzz/crash-* (make it a regression test under tests/fuzz/).
#
# Without --instrumented the core is the project's normal build (.venv): atheris
# is guided by the Python code it runs and the core is a black box.
# With --instrumented the core is compiled by clang with
# -fsanitize=fuzzer-no-link,address,undefined (and -fno-wrapv, so that signed
# overflow in the core is reported: CPython's -fwrapv would hide it) in a copy of
# the sources under .fuzz-build/, run by its own virtualenv .fuzz-venv/, with
# atheris' ASan+libFuzzer runtime preloaded (atheris' docs, "native extensions").
# The normal in-place build is never touched.  Needs clang (Debian's; installed with apt-get when missing).
set -euo pipefail
INSTRUMENTED=0
if [ "${1:-}" = "--instrumented" ]; then INSTRUMENTED=1; shift; fi
TARGET="${1:?usage: scripts/fuzz.sh [--instrumented] TARGET SECONDS}"
SECONDS_="${2:?usage: scripts/fuzz.sh [--instrumented] TARGET SECONDS}"
shift 2
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -f "$ROOT/fuzz/fuzz_$TARGET.py" ] || { echo "no such target: $TARGET (see fuzz/)" >&2; exit 2; }
mkdir -p "$ROOT/fuzz/corpus/$TARGET"
OPTS=("$ROOT/fuzz/corpus/$TARGET" -max_total_time="$SECONDS_" -rss_limit_mb=2048 -timeout=30
      -artifact_prefix="$ROOT/fuzz/crash-$TARGET-")

if [ "$INSTRUMENTED" = 0 ]; then
    # the extras scripts/test.sh installs, so the two share one .venv without reinstalling it
    KAFKAREC_EXTRAS="test,spark" source "$ROOT/scripts/env.sh"
    cd "$ROOT/fuzz"
    exec "$VPY" "fuzz_$TARGET.py" "${OPTS[@]}" "$@"
fi

if ! command -v clang >/dev/null; then
    # Debian's clang, installed the way scripts/system_deps.sh installs the tests' packages
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    if command -v apt-get >/dev/null && $SUDO true 2>/dev/null; then
        echo "installing clang (Debian's clang package) for --instrumented" >&2
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q clang >/dev/null 2>&1 \
            || { $SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q clang >/dev/null; }
    fi
    command -v clang >/dev/null || { echo "--instrumented needs clang (apt-get install -y clang)" >&2; exit 2; }
fi
FVENV="$ROOT/.fuzz-venv"
BUILD="$ROOT/.fuzz-build"
FPY="$FVENV/bin/python"
if [ ! -x "$FPY" ]; then
    "${PYTHON:-python3}" -m venv "$FVENV"
fi
if ! "$FPY" -c "import atheris, pyarrow, kafkarec" 2>/dev/null; then
    # the project's runtime dependencies (from pyproject.toml) plus what the harnesses and the build need
    DEPS="$("$FPY" -c 'import tomllib; print(" ".join(tomllib.load(open("'"$ROOT"'/pyproject.toml", "rb"))["project"]["dependencies"]))')"
    # shellcheck disable=SC2086
    "$FPY" -m pip install -q --disable-pip-version-check $DEPS "atheris>=2.3" "pyarrow>=14" "numpy>=1.24" \
        "cython>=3.0.10,<4" "setuptools>=68" wheel
fi
if ! "$FPY" -c "import google.protobuf, grpc_tools, hypothesis" 2>/dev/null; then
    # the typed harnesses' oracles: the protobuf package's own parse (tests/protobuf), hypothesis
    "$FPY" -m pip install -q --disable-pip-version-check "protobuf>=4.25" "grpcio-tools>=1.60" \
        "googleapis-common-protos>=1.60" "hypothesis>=6.100"
fi
# a copy of the sources, so the instrumented core never replaces the normal one
mkdir -p "$BUILD/fuzz"
tar -C "$ROOT" --exclude='*.so' --exclude=_core.c --exclude=__pycache__ -cf - kafkarec spark_udfs | tar -C "$BUILD" -xf -
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-wrapv"
# the copy keeps the sources' times, which can be older than the last build's C: compare contents instead
CORE_SUM="$(cat "$ROOT"/kafkarec/_core.pyx "$ROOT"/kafkarec/_core_src/* "$ROOT/setup.py" | sha256sum | cut -c1-32) $SAN"
if [ "$(cat "$BUILD/.core-sum" 2>/dev/null)" != "$CORE_SUM" ]; then
    rm -f "$BUILD"/kafkarec/_core.c "$BUILD"/kafkarec/_core*.so
fi
# -p: setup.py is one of the core's build dependencies, and a fresh time would rebuild it every run
cp -p "$ROOT/setup.py" "$ROOT/pyproject.toml" "$BUILD/"
cp "$ROOT"/fuzz/*.py "$BUILD/fuzz/"
# the test helpers some harnesses import (oracles, schema worlds): Python files, and the Java
# oracles some of them compile (tests/java)
(cd "$ROOT" && find tests \( -name '*.py' -o -name '*.java' \) -print0 | tar --null -T - -cf -) | tar -C "$BUILD" -xf -
(cd "$BUILD" && CC=clang LDSHARED="clang -shared" CFLAGS="$SAN" LDFLAGS="$SAN" \
    "$FPY" setup.py -q build_ext --inplace >/dev/null)
printf '%s' "$CORE_SUM" > "$BUILD/.core-sum"
ASAN_RT="$("$FPY" -c 'import atheris, os; print(os.path.join(atheris.path(), "asan_with_fuzzer.so"))')"
# long campaigns keep what they find in .fuzz-build/corpus (the committed seeds stay small)
mkdir -p "$BUILD/corpus/$TARGET"
OPTS=("$BUILD/corpus/$TARGET" "${OPTS[@]}")
cd "$BUILD/fuzz"
export PYTHONHASHSEED=0
export LD_PRELOAD="$ASAN_RT"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}"
# every UBSan report ends the run (a crash file), except the suppressed ones (fuzz/ubsan.supp)
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/fuzz/ubsan.supp}"
exec "$FPY" "fuzz_$TARGET.py" "${OPTS[@]}" "$@"
