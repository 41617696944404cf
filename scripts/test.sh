#!/usr/bin/env bash
# The whole test suite: `npm test` (and CI's .ci/run) runs this.
#
#   1. installs dependencies if missing (npm ci) and builds podctl (the CLI tests run bin/run.js);
#   2. as root on Linux, starts a private containerd "node" (test/e2e/containerd-node.sh up) for the
#      end-to-end suite; without root the e2e suite skips and says so loudly, unless
#      PODCTL_REQUIRE_CONTAINERD=1 (set by CI), which turns a missing runtime into a failure;
#   3. runs vitest (fast suites and e2e), then stops the containerd node again;
#   4. ends with the line "N passed, N failed" read by CI. Exit code: vitest's.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[test] npm ci" >&2
  npm ci --no-audit --no-fund >&2 || { echo "0 passed, 1 failed"; exit 1; }
fi
echo "[test] build" >&2
npm run -s build >&2 || { echo "[test] build failed" >&2; echo "0 passed, 1 failed"; exit 1; }

node_up=0
export NODE_DIR=${NODE_DIR:-/tmp/podctl-node}
if [ "$(id -u)" = 0 ] && [ "$(uname -s)" = Linux ] && [ "${PODCTL_SKIP_CONTAINERD:-}" != 1 ]; then
  if sock=$(bash test/e2e/containerd-node.sh up); then
    export PODCTL_E2E_SOCKET=$sock
    node_up=1
  else
    echo "[test] warning: the containerd test node did not come up" >&2
  fi
fi
if [ "$node_up" = 0 ]; then
  if [ "${PODCTL_REQUIRE_CONTAINERD:-}" = 1 ]; then
    echo "[test] error: PODCTL_REQUIRE_CONTAINERD=1 but no containerd test node is running" >&2
  else
    echo "[test] ################################################################" >&2
    echo "[test] # NO CONTAINERD: the real-runtime (e2e) suite will be SKIPPED.  #" >&2
    echo "[test] # Run as root on Linux to include it.                         #" >&2
    echo "[test] ################################################################" >&2
  fi
fi

results=$(mktemp /tmp/podctl-vitest.XXXXXX.json)
npx vitest run --reporter=default --reporter=json --outputFile.json="$results" "$@"
rc=$?

if [ "$node_up" = 1 ]; then bash test/e2e/containerd-node.sh down >&2 || true; fi

node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  try {
    const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    passed = r.numPassedTests; failed = r.numFailedTests;
    // a file that failed before running any test (an import error) counts as one failure
    for (const f of r.testResults || []) if (f.status === "failed" && !(f.assertionResults || []).length) failed += 1;
    skipped = (r.numPendingTests || 0) + (r.numTodoTests || 0);
  } catch (e) { failed = 1; console.error("[test] could not read vitest results: " + e.message); }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
' "$results"
rm -f "$results"
exit $rc
