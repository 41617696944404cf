#!/usr/bin/env bash
# Store crash soak: SIGKILLs podctl sessions at random instants during terminations, then checks
# that one sync-known recovers every pod and that no checkpoint is corrupt (test/store/crash.test.ts
# with more trials). Default 5 lanes × 40 trials = 200 trials.
#
#   scripts/soak-store.sh [TRIALS_PER_LANE] [LANES]
#   PODCTL_CRASH_SEED=1234 scripts/soak-store.sh     # replay a seed printed by a failing run
set -euo pipefail
cd "$(dirname "$0")/.."
export PODCTL_CRASH_TRIALS="${1:-40}"
export PODCTL_CRASH_LANES="${2:-5}"
export PODCTL_CRASH_REPORT=1
echo "soak-store: $((PODCTL_CRASH_TRIALS * PODCTL_CRASH_LANES)) crash trials (${PODCTL_CRASH_LANES} lanes × ${PODCTL_CRASH_TRIALS})" >&2
exec npx vitest run test/store/crash.test.ts
