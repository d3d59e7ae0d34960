#!/usr/bin/env bash
# What the suite's component lane needs before it asks for it, made ahead by scripts/test.sh beside
# pytest (each piece is made once and kept; a second run only checks stamps):
#   - the JVM modules (jvm/*/pom.xml resolved into the Maven cache, scripts/jvm.sh), one after another;
#   - the bare Pythons 3.11 and 3.12 (pyspark, pyarrow, pandas only; scripts/bare_python.sh), and the
#     lakehouse runtimes' bare Python (--lakehouse: tests/broker/test_lakehouse_spark.py's Spark);
#   - the cp311 and cp312 wheelhouses (scripts/wheelhouse.sh), before the release check's five;
#   - clients (after the wheelhouses: it installs kafkarec's wheel): the lakehouse Spark's Connect
#     client venv (tests/support/spark/spark_helpers.py's connect_client(lakehouse=True, extras="restore"), as
#     tests/broker/test_lakehouse_spark.py asks for it: its kafkarec stamp names the extras, so the
#     same call, or the test installs kafkarec into it a second time); Sail's venv (pysail and the
#     pyspark-client it takes: tests/support/spark/sail.py's sail_python, as tests/spark/test_sail.py asks).
# Each is keyed by what it holds (the interpreter's version and the requirements; the wheel's hash), so
# a piece made here is the test's own, not a copy: the test finds it done, or waits on its lock.
#
#   bash scripts/test_deps.sh VENV_PYTHON [jvm] [bare] [wheelhouses] [clients]   # exits non-zero if a piece could not be made
#
# The kinds named (jvm, bare and wheelhouses without a name) run side by side (Maven and pip wait on
# the network, the wheel builds on gcc).  scripts/test.sh starts the JVM modules before it makes .venv (they
# need no Python: VENV_PYTHON is not used), and the rest once .venv is there.  A piece that fails
# here fails again, with its error, in the test that needs it.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VPY="${1:?usage: bash scripts/test_deps.sh VENV_PYTHON [jvm] [bare] [wheelhouses]}"
shift
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(jvm bare wheelhouses)
for kind in "${KINDS[@]}"; do
    case "$kind" in jvm|bare|wheelhouses|clients) ;; *) echo "test_deps.sh: unknown kind $kind" >&2; exit 2 ;; esac
done
cd "$ROOT"
mkdir -p .cache
LOG_DIR="$ROOT/.venv/test-deps"
mkdir -p "$LOG_DIR"

# The interpreters the Spark tests use (tests/support/spark/spark_helpers.py: python_for, _cache_tag): the venv's
# own and a Python 3.12, on PATH or under pyenv.
PY312="$(command -v python3.12 || true)"
for cand in "$HOME"/.pyenv/versions/3.12.*/bin/python3.12; do
    [ -x "$cand" ] && PY312="$cand"
done
tag() { "$1" -c 'import sys; print(sys.implementation.cache_tag)'; }

jvm_modules() {
    local pom
    for pom in jvm/*/pom.xml; do
        # a module only a benchmark runs on is resolved by that benchmark, not for every test run
        grep -q "kafkarec: benchmark only" "$pom" && continue
        if command -v mvn >/dev/null && command -v java >/dev/null; then
            bash scripts/jvm.sh "$(dirname "$pom")" > /dev/null || return 1
        fi
    done
}

bare_pythons() {
    bash scripts/bare_python.sh ".cache/bare-$(tag "$VPY")" --python "$VPY" > /dev/null || return 1
    if [ -n "$PY312" ]; then
        bash scripts/bare_python.sh ".cache/bare-$(tag "$PY312")" --python "$PY312" > /dev/null || return 1
    fi
    # made here, pip's download and its build of the pyspark sdist are off the lakehouse check's clock
    bash scripts/bare_python.sh ".cache/bare-lakehouse-$(tag "$VPY")" --python "$VPY" --lakehouse > /dev/null || return 1
}

# made by the tests' own function (the same folder, stamps and lock), from the wheelhouse above, with
# the test's own arguments (the stamp holds the extras)
clients() {
    PYTHONPATH="$ROOT/tests" "$VPY" -c 'import sys
from support.spark import spark_helpers as H
H.connect_client(sys.argv[1], H.wheelhouse(sys.argv[1]), lakehouse=True, extras="restore")' "$VPY" || return 1
    # Sail's venv (tests/support/spark/sail.py: pysail and its pinned pyspark-client), made by the same function
    PYTHONPATH="$ROOT/tests" "$VPY" -c 'import sys
from support.spark import sail
sail.sail_python(sys.argv[1])' "$VPY" || return 1
}

wheelhouses() {
    bash scripts/wheelhouse.sh ".cache/wheelhouse-$(tag "$VPY")" --python "$VPY" > /dev/null || return 1
    if [ -n "$PY312" ]; then
        bash scripts/wheelhouse.sh ".cache/wheelhouse-$(tag "$PY312")" --python "$PY312" > /dev/null || return 1
    fi
}

STARTED=$SECONDS
JOBS=()
for kind in "${KINDS[@]}"; do
    case "$kind" in
        jvm) jvm_modules > "$LOG_DIR/jvm.log" 2>&1 & ;;
        bare) bare_pythons > "$LOG_DIR/bare.log" 2>&1 & ;;
        wheelhouses) wheelhouses > "$LOG_DIR/wheelhouses.log" 2>&1 & ;;
        clients) clients > "$LOG_DIR/clients.log" 2>&1 & ;;
    esac
    JOBS+=("$kind:$!")
done
RC=0
for job in "${JOBS[@]}"; do
    if ! wait "${job#*:}"; then
        echo "test_deps.sh: ${job%%:*} failed (log: $LOG_DIR/${job%%:*}.log):" >&2
        tail -20 "$LOG_DIR/${job%%:*}.log" >&2
        RC=1
    fi
done
echo "test_deps.sh: ${KINDS[*]} ready in $((SECONDS - STARTED)) s" >&2
exit $RC
