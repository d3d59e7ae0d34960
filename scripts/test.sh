#!/usr/bin/env bash
# Set everything up and run the whole test suite.
set -euo pipefail
KAFKAREC_EXTRAS="test,spark" source "$(dirname "$0")/env.sh"
bash "$(dirname "$0")/system_deps.sh"     # PostgreSQL for tests/cdc, from Debian, when missing
if [ $# -gt 0 ]; then
    exec "$VPY" -m pytest "$@"
fi
# The whole suite.  The release check (tests/test_release.py) compiles the core for every CPython, CPU-bound
# for a quarter of an hour, while much of the rest waits on JVMs and servers: it runs beside the rest, its
# output printed after it (wheel builds share .cache/wheelhouse/lock, so the two never build at once).
# Every full run leaves JUnit XML (each test's duration) in .venv/test-results; scripts/test_times.py
# prints where the time went.
RESULTS="$ROOT/.venv/test-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
STARTED=$SECONDS
RELEASE_LOG="$ROOT/.venv/release-test.log"
"$VPY" -m pytest -p no:cacheprovider --junitxml="$RESULTS/release.xml" tests/test_release.py > "$RELEASE_LOG" 2>&1 &
RELEASE_PID=$!
trap 'kill "$RELEASE_PID" 2>/dev/null || true' EXIT
set +e
"$VPY" -m pytest --junitxml="$RESULTS/main.xml" --ignore=tests/test_release.py
MAIN_RC=$?
wait "$RELEASE_PID"
RELEASE_RC=$?
trap - EXIT
set -e
echo "---- where the time went (scripts/test_times.py; the whole command: $((SECONDS - STARTED)) s) ----"
"$VPY" "$ROOT/scripts/test_times.py" || true
echo "---- tests/test_release.py (run beside the rest) ----"
cat "$RELEASE_LOG"
"$VPY" "$ROOT/scripts/test_times.py" --closing-line || true
[ "$MAIN_RC" -eq 0 ] && [ "$RELEASE_RC" -eq 0 ]
