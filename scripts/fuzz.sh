#!/usr/bin/env bash
# Run one coverage-guided fuzz target for a while:
#   bash scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
# TARGET is a file fuzz/fuzz_TARGET.py: batches, arrow, sidefiles, convert, builder, cli.
# New inputs that reach new code go to fuzz/corpus/TARGET; a crash is written to
# fuzz/crash-* (make it a regression test under tests/fuzz/).  The core is the
# project's normal build: atheris guides by the Python code it runs; see
# fuzz/README.md for a core built with clang's -fsanitize=fuzzer-no-link,address.
set -euo pipefail
TARGET="${1:?usage: scripts/fuzz.sh TARGET SECONDS}"
SECONDS_="${2:?usage: scripts/fuzz.sh TARGET SECONDS}"
shift 2
source "$(dirname "$0")/env.sh"
HARNESS="$ROOT/fuzz/fuzz_$TARGET.py"
[ -f "$HARNESS" ] || { echo "no such target: $TARGET (see fuzz/)" >&2; exit 2; }
mkdir -p "$ROOT/fuzz/corpus/$TARGET"
cd "$ROOT/fuzz"
exec "$VPY" "$HARNESS" "corpus/$TARGET" -max_total_time="$SECONDS_" -rss_limit_mb=2048 -timeout=30 \
    -artifact_prefix="$ROOT/fuzz/crash-$TARGET-" "$@"
