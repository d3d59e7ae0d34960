#!/usr/bin/env bash
# Set everything up and run the main job on sample data generated here.
set -euo pipefail
KAFKAREC_EXTRAS="spark" source "$(dirname "$0")/env.sh"
"$VPY" -m kafkarec.sample sample-data --clean
"$VPY" -m kafkarec stats sample-data
