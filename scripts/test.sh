#!/usr/bin/env bash
# Set everything up and run the whole test suite.
set -euo pipefail
KAFKAREC_EXTRAS="test,spark" source "$(dirname "$0")/env.sh"
bash "$(dirname "$0")/system_deps.sh"     # PostgreSQL for tests/cdc, from Debian, when missing
"$VPY" -m pytest "$@"
