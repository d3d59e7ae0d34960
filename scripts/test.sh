#!/usr/bin/env bash
# Set everything up and run the whole test suite (with arguments: pytest with those arguments).
set -euo pipefail
# The machine's CPU ticks (busy, idle) now and at the end: how much of the 2 cores the run used,
# beside the CPU-seconds of its own processes (bash's `times`), in phases.json and test_times.py.
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat 2>/dev/null || echo "0 0"; }
read -r BUSY0 IDLE0 < <(cpu_ticks)
# The least free space (KiB) seen where the checkout and the tests' temporary folders live, and the
# least memory available, every 5 s of a full run (.venv/test-results/lowest): a run that fills the
# disk or the memory fails in ways that name no test, and the closing lines warn of it.
free_kib() { df -Pk "$1" 2>/dev/null | awk 'NR == 2 {print $4}' || echo 0; }
watch_lowest() {    # OUT CHECKOUT TMP
    local c t m lc="" lt="" lm=""
    while :; do
        c="$(free_kib "$2")"; t="$(free_kib "$3")"; m="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)"
        lc=$(( ${lc:-$c} < ${c:-0} ? ${lc:-$c} : ${c:-0} ))
        lt=$(( ${lt:-$t} < ${t:-0} ? ${lt:-$t} : ${t:-0} ))
        lm=$(( ${lm:-$m} < ${m:-0} ? ${lm:-$m} : ${m:-0} ))
        echo "$lc $lt $lm" > "$1.part" && mv -f "$1.part" "$1"
        sleep 5
    done
}
# KAFKAREC_CPU_PROFILE=1: every process's CPU by kind (scripts/cpu_profile.py), printed at the end
PROFILE_PID=""
PROFILE_OUT="$(cd "$(dirname "$0")/.." && pwd)/.cache/cpu-profile.json"
if [ "${KAFKAREC_CPU_PROFILE:-0}" = "1" ] && [ $# -eq 0 ]; then
    mkdir -p "$(dirname "$PROFILE_OUT")"
    python3 "$(dirname "$0")/cpu_profile.py" sample "$PROFILE_OUT" & PROFILE_PID=$!
fi
# The whole suite: the JVM modules (scripts/test_deps.sh jvm: Maven, waiting on the network; no
# Python needed) are resolved beside the set-up below (apt, pip, the core's compile) instead of after it.
JVM_PID=""
if [ $# -eq 0 ]; then
    JVM_LOG="$(cd "$(dirname "$0")/.." && pwd)/.cache/test-deps-jvm.log"
    mkdir -p "$(dirname "$JVM_LOG")"
    bash "$(dirname "$0")/test_deps.sh" - jvm > "$JVM_LOG" 2>&1 &
    JVM_PID=$!
    trap 'kill "$JVM_PID" ${PROFILE_PID:+"$PROFILE_PID"} 2>/dev/null || true' EXIT
fi
# PostgreSQL and MariaDB for tests/cdc and ccache, from Debian, when missing: before env.sh,
# whose first compile of the core (the editable install's, then the in-place one) goes through ccache
bash "$(dirname "$0")/system_deps.sh"
KAFKAREC_EXTRAS="test,spark" source "$(dirname "$0")/env.sh"

# Two lanes (pytest-xdist): tests/support/lanes.py puts the tests that share a real component (Spark,
# the broker, PostgreSQL, SeaweedFS) or a module's fixture in one, the CPU-bound rest shares both.  One process instead where the
# arguments choose (-n, -p no:xdist), a debugger needs one (--pdb, --trace), or KAFKAREC_TEST_LANES=1.
LANES=(-n "${KAFKAREC_TEST_LANES:-2}" --dist loadgroup)
for arg in "$@"; do
    case "$arg" in
        -n|-n[0-9]*|--numprocesses*|--pdb|--trace|no:xdist|-pno:xdist) LANES=() ;;
    esac
done
[ "${KAFKAREC_TEST_LANES:-2}" = "1" ] && LANES=()
if [ $# -gt 0 ]; then
    exec "$VPY" -m pytest "${LANES[@]}" "$@"
fi

# The whole suite.  Beside pytest, one background job makes what the component lane will ask for
# (scripts/test_deps.sh: the cp311/cp312 wheelhouses, and beside them the bare Pythons, then the
# lakehouse Spark's Connect client; the Maven modules are on their way since the start) and then runs the release check (tests/test_release.py: the
# core compiled for every CPython, CPU-bound), so the Spark tests find their wheels built and never wait
# behind the release's compiles, and the release waits for no download it does not use; its output is
# printed after pytest's.
# Every full run leaves JUnit XML (each test's duration) in .venv/test-results, and
# scripts/test_times.py prints where the time went.
# The suite's budget is 30 minutes for this whole command on a fresh 2-core machine, set-up included
# ($SECONDS counts from the command's start): the closing line says how long it took, and a run over
# the budget ends with a WARNING line (the exit status stays the tests' verdict).
RESULTS="$ROOT/.venv/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
watch_lowest "$RESULTS/lowest" "$ROOT" "${TMPDIR:-/tmp}" & LOWEST_PID=$!
STARTED=$SECONDS
RELEASE_LOG="$ROOT/.venv/release-test.log"
BESIDE_TIMES="$RESULTS/beside.times"
(
    # a failure shows again in the test that needs it; the release needs no bare Python
    bash "$ROOT/scripts/test_deps.sh" "$VPY" bare & BARE_PID=$!
    bash "$ROOT/scripts/test_deps.sh" "$VPY" wheelhouses || true
    # the lakehouse Spark's Connect client installs the cp311 wheel: beside the release check
    bash "$ROOT/scripts/test_deps.sh" "$VPY" clients & CLIENTS_PID=$!
    DEPS_DONE=$SECONDS
    echo "(the release check started $((DEPS_DONE - STARTED)) s into the run)"
    RC=0
    "$VPY" -m pytest -p no:cacheprovider -p no:xdist --junitxml="$RESULTS/release.xml" tests/test_release.py || RC=$?
    wait "$BARE_PID" || true
    wait "$CLIENTS_PID" || true
    echo "$((DEPS_DONE - STARTED)) $((SECONDS - DEPS_DONE)) $((SECONDS - STARTED))" > "$BESIDE_TIMES"
    exit $RC
) > "$RELEASE_LOG" 2>&1 &
RELEASE_PID=$!
trap 'kill "$RELEASE_PID" "$JVM_PID" "$LOWEST_PID" ${PROFILE_PID:+"$PROFILE_PID"} 2>/dev/null || true' EXIT
set +e
# its output kept too: the closing lines name what failed and a pytest internal error's cause, where a
# reader of only the output's tail (CI's) finds them (-u: into the pipe as it is written, as it was
# into a terminal or a file)
"$VPY" -u -m pytest "${LANES[@]}" --junitxml="$RESULTS/main.xml" --ignore=tests/test_release.py 2>&1 \
    | tee "$RESULTS/main.log"
MAIN_RC=${PIPESTATUS[0]}
PYTEST_SECONDS=$((SECONDS - STARTED))
wait "$RELEASE_PID"
RELEASE_RC=$?
wait "$JVM_PID"       # long done: the tests that need a module waited for it (scripts/jvm.sh's lock)
PROFILE_OUT_READY=""
if [ -n "$PROFILE_PID" ]; then    # stopped here, before the trap that would stop it goes
    kill "$PROFILE_PID" 2>/dev/null || true
    wait "$PROFILE_PID" 2>/dev/null || true
    PROFILE_OUT_READY=1
fi
kill "$LOWEST_PID" 2>/dev/null || true
wait "$LOWEST_PID" 2>/dev/null || true
trap - EXIT
set -e
read -r DEPS_S RELEASE_S BESIDE_END < "$BESIDE_TIMES" || { DEPS_S=0; RELEASE_S=0; BESIDE_END=0; }
read -r BUSY1 IDLE1 < <(cpu_ticks)
HZ="$(getconf CLK_TCK 2>/dev/null || echo 100)"
# the children's user and system time (the second line of `times`: "0m12.345s 0m1.000s")
times > "$RESULTS/times.txt"      # in this shell: in a pipeline's subshell its children are none
OWN_CPU="$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%d", n }' "$RESULTS/times.txt")"
read -r LOW_CHECKOUT LOW_TMP LOW_MEMORY < "$RESULTS/lowest" || true
printf '{"whole": %d, "setup": %d, "pytest": %d, "deps": %d, "release": %d, "beside_end": %d, "machine_busy_s": %d, "machine_idle_s": %d, "cores": %d, "own_cpu_s": %d, "lowest_kib": {"disk of the checkout": %d, "disk of the temporary folders": %d, "memory available": %d}}\n' \
    "$SECONDS" "$STARTED" "$PYTEST_SECONDS" "$DEPS_S" "$RELEASE_S" "$BESIDE_END" \
    $(( (BUSY1 - BUSY0) / HZ )) $(( (IDLE1 - IDLE0) / HZ )) "$(nproc)" "${OWN_CPU:-0}" \
    "${LOW_CHECKOUT:-0}" "${LOW_TMP:-0}" "${LOW_MEMORY:-0}" > "$RESULTS/phases.json"
echo "---- where the time went (scripts/test_times.py; the whole command: $SECONDS s, set-up included) ----"
"$VPY" "$ROOT/scripts/test_times.py" || true
if [ -n "$PROFILE_OUT_READY" ]; then
    echo "---- where the CPU went (scripts/cpu_profile.py report $PROFILE_OUT) ----"
    python3 "$ROOT/scripts/cpu_profile.py" report "$PROFILE_OUT" || true
fi
echo "---- scripts/test_deps.sh and tests/test_release.py (run beside the rest) ----"
cat "$JVM_LOG" "$RELEASE_LOG"
BUDGET_RC=0
"$VPY" "$ROOT/scripts/test_times.py" --closing-line --elapsed "$SECONDS" || BUDGET_RC=$?
# Over the budget is a WARNING line, not a failure: the tests' verdict is the exit status.
[ "$MAIN_RC" -eq 0 ] && [ "$RELEASE_RC" -eq 0 ]
