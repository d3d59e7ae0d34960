#!/usr/bin/env bash
# Set everything up and run the whole test suite.
set -euo pipefail
KAFKAREC_EXTRAS="test,spark" source "$(dirname "$0")/env.sh"
"$VPY" -m pytest "$@"
