#!/usr/bin/env bash
# The whole test suite: `npm test` (and CI's .ci/run) runs this.
#
#   1. installs dependencies if missing (npm ci) and builds podctl (the CLI tests run bin/run.js),
#      the single executable dist/podctl-linux-x64 (scripts/sea.mjs; test/sea runs it) and the OCI
#      image archive carrying it (scripts/sea-image.mjs; test/sea/image.test.ts checks it);
#   2. as root on Linux, installs the Prometheus tools the agent's e2e tests run (Debian packages
#      prometheus, prometheus-node-exporter), the shutdown guard's (dbus-daemon, systemd, python3-dbus,
#      python3-gi) and the headless browser the drain report's tests render it in (chromium;
#      test/commands/report-browser.test.ts), and starts a private containerd "node" (test/e2e/containerd-node.sh up) for the
#      end-to-end suite; without root the e2e suite skips and says so loudly, unless
#      PODCTL_REQUIRE_CONTAINERD=1 (set by CI), which turns a missing runtime into a failure;
#   3. runs the whole suite on the Node.js LTS the executable carries (tools/node-lts: node-lts-26):
#      the fast suite two files at a time (PODCTL_TEST_WORKERS), then the containerd and executable
#      suites (test/e2e, test/sea) one file at a time; then stops the containerd node again;
#   4. runs the fast suite (no runtime, no executable; two files at a time) on the other Node.js
#      versions of package.json's `engines`: the machine's node (20) and node-lts-24, without the
#      long scenario files listed in test/main-node-only.txt (they ran on the LTS in step 3);
#   5. npm run lint, one check: typescript-eslint with type information (eslint.config.js), the import layers
#      (.dependency-cruiser.cjs), the format (prettier --check, .prettierrc.json) and dead code (knip, knip.json); zero findings;
#   6. ends with one line "N passed, N failed, N skipped", the sum of all runs, read by CI.
#      Exit code: 0 if every run passed, else the first failing run's.
#
# Arguments are passed to vitest, and then only the whole suite runs (one file, one Node.js).
# PODCTL_SKIP_SEA=1 builds no executable (test/sea then skips, loudly); PODCTL_TEST_NODES="main"
# runs only the whole suite.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[test] npm ci" >&2
  npm ci --no-audit --no-fund >&2 || { echo "0 passed, 1 failed"; exit 1; }
fi
# The Node.js versions tested: the LTS the executable carries runs everything; the others the fast suite.
# (tools/node-lts: installed apart from node_modules, so that `node` in npm scripts stays the machine's)
LTS=tools/node-lts/node_modules
if [ ! -x "$LTS/node-lts-26/bin/node" ] || [ ! -x "$LTS/node-lts-24/bin/node" ] || [ tools/node-lts/package-lock.json -nt "$LTS/.package-lock.json" ]; then
  echo "[test] npm ci --prefix tools/node-lts" >&2
  npm ci --prefix tools/node-lts --no-audit --no-fund >&2 || { echo "0 passed, 1 failed"; exit 1; }
fi
MAIN_NODE=$LTS/node-lts-26/bin/node
OTHER_NODES=("$(command -v node)" "$LTS/node-lts-24/bin/node")

# The shutdown guard's tests: a private dbus-daemon, the stand-in logind (python3-dbus, python3-gi)
# and systemd-inhibit (Debian packages), installed as root; before the image, which carries this
# machine's systemd-inhibit.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! { command -v dbus-daemon && command -v systemd-inhibit && /usr/bin/python3 -c 'import dbus; from gi.repository import GLib'; } >/dev/null 2>&1; then
  echo "[test] apt-get install dbus-daemon systemd python3-dbus python3-gi" >&2
  { apt-get update -qq || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dbus-daemon systemd python3-dbus python3-gi; } >/dev/null 2>&1 \
    || echo "[test] warning: could not install dbus-daemon/systemd/python3-dbus/python3-gi" >&2
fi

echo "[test] build" >&2
npm run -s build >&2 || { echo "[test] build failed" >&2; echo "0 passed, 1 failed"; exit 1; }
if [ "${PODCTL_SKIP_SEA:-}" != 1 ]; then
  echo "[test] single executable (scripts/sea.mjs)" >&2
  node scripts/sea.mjs >&2 || { echo "[test] the single executable did not build" >&2; echo "0 passed, 1 failed"; exit 1; }
  node scripts/sea-image.mjs >&2 || { echo "[test] the image archive did not build" >&2; echo "0 passed, 1 failed"; exit 1; }
  export PODCTL_REQUIRE_SEA=1
fi


# The real Prometheus tools the agent's end-to-end tests use (Debian packages), installed as root.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! { command -v prometheus && command -v promtool && command -v prometheus-node-exporter; } >/dev/null; then
  echo "[test] apt-get install prometheus prometheus-node-exporter" >&2
  { apt-get update -qq || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter; } >/dev/null 2>&1 \
    || echo "[test] warning: could not install prometheus/prometheus-node-exporter" >&2
  # the packages' own services are not wanted on a test machine (no-ops where no init system runs them)
  { service prometheus stop; service prometheus-node-exporter stop; } >/dev/null 2>&1 || true
fi

# The browser the drain report is rendered in (Debian's chromium, headless), installed as root.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v chromium >/dev/null; then
  echo "[test] apt-get install chromium" >&2
  { apt-get update -qq || true; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >/dev/null 2>&1 \
    || echo "[test] warning: could not install chromium (the drain report's browser tests skip, or fail with PODCTL_REQUIRE_CHROMIUM=1)" >&2
fi

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

# Every temporary file of the run (the tests' own, vitest's results) goes under one directory that
# is removed when the run ends, however it ends: a run leaves nothing behind in /tmp, not even from
# a test that failed before its clean-up. (0755: one test probes a socket as an unprivileged user.)
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/podctl-test.XXXXXX") || { echo "0 passed, 1 failed"; exit 1; }
chmod 0755 "$run_tmp"
# (Processes the tests left behind under it — a background driver still waiting for a simulator the
# test closed — are stopped first: nothing the run started outlives it.)
trap 'pkill -KILL -f -- "$run_tmp/" 2>/dev/null; rm -rf --one-file-system "$run_tmp"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
export TMPDIR=$run_tmp
free_mb=$(df -Pk "$run_tmp" | awk 'NR == 2 { print int($4 / 1024) }')
if [ "${free_mb:-0}" -lt 1024 ]; then
  echo "[test] warning: only ${free_mb} MB free under $run_tmp; the suite needs about 1 GB there" >&2
fi
results_dir=$run_tmp/results
mkdir -p "$results_dir"
# vitest under one Node.js (its directory first on PATH, so that `node` in child processes is it too)
run_vitest() { # <label> <node> <vitest args...>
  local label=$1 node=$2; shift 2
  local dir; dir=$(cd "$(dirname "$node")" && pwd)
  echo "[test] ── $label: Node.js $("$node" --version) ──" >&2
  local out="$results_dir/$label.json" status=0
  PATH="$dir:$PATH" "$node" node_modules/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile.json="$out" "$@" || status=$?
  # a run that ended without results (vitest crashed) is one failure
  [ -s "$out" ] || echo '{"numFailedTests":1}' > "$out"
  return $status
}

rc=0
# lint with type information (eslint.config.js), zero findings: one check in the summary
if [ $# = 0 ]; then
  echo "[test] ── lint: eslint, depcruise, prettier --check, knip ──" >&2
  if npm run -s lint >&2; then echo '{"numPassedTests":1}' > "$results_dir/lint.json"
  else echo "[test] lint found problems (npm run lint)" >&2; echo '{"numFailedTests":1}' > "$results_dir/lint.json"; rc=1; fi
fi
# The fast suite runs FAST_WORKERS files at a time (vitest's default is one fewer than the cores: one
# on a 2-core machine): its files mostly wait — on processes they start, grace periods, timers — and
# two at a time took a fast suite from ~4.7 to ~2.5 min here. The containerd and executable suites
# (test/e2e, test/sea) stay one file at a time: they share one containerd node and its pods.
FAST_WORKERS=${PODCTL_TEST_WORKERS:-2}
FAST_ONLY=(--exclude 'test/e2e/**' --exclude 'test/sea/**' --maxWorkers="$FAST_WORKERS")
if [ $# = 0 ]; then
  run_vitest "fast-$("$MAIN_NODE" --version)" "$MAIN_NODE" "${FAST_ONLY[@]}" || { r=$?; [ "$rc" = 0 ] && rc=$r; }
  run_vitest "e2e-$("$MAIN_NODE" --version)" "$MAIN_NODE" --maxWorkers=1 test/e2e test/sea || { r=$?; [ "$rc" = 0 ] && rc=$r; }
else
  run_vitest full "$MAIN_NODE" "$@" || { r=$?; [ "$rc" = 0 ] && rc=$r; }
fi

if [ "$node_up" = 1 ]; then bash test/e2e/containerd-node.sh down >&2 || true; fi

if [ $# = 0 ] && [ "${PODCTL_TEST_NODES:-all}" = all ]; then
  MAIN_NODE_ONLY=()
  while read -r file _; do
    case $file in ''|'#'*) continue ;; esac
    [ -f "$file" ] || { echo "[test] error: test/main-node-only.txt names $file, which does not exist" >&2; echo '{"numFailedTests":1}' > "$results_dir/main-node-only.json"; continue; }
    MAIN_NODE_ONLY+=(--exclude "$file")
  done < test/main-node-only.txt
  for node in "${OTHER_NODES[@]}"; do
    [ -x "$node" ] || { echo "[test] warning: $node is missing; its fast suite is not run" >&2; echo '{"numFailedTests":1}' > "$results_dir/missing-$RANDOM.json"; continue; }
    # the fast suite: no runtime, no executable (it carries its own Node.js: tested above), and no
    # browser (the page it renders is the same whatever Node.js wrote it: tested above)
    # browser (the page it renders is the same whatever Node.js wrote it: tested above), and not the
    # long scenario files of test/main-node-only.txt (minutes of grace periods, crashes, a bus and a
    # terminal driven through whole processes; the Node.js APIs they reach are reached by the
    # shorter files too): they run once, above
    (unset PODCTL_E2E_SOCKET PODCTL_REQUIRE_CONTAINERD PODCTL_REQUIRE_SEA PODCTL_REQUIRE_CHROMIUM
     run_vitest "fast-$("$node" --version)" "$node" "${FAST_ONLY[@]}" --exclude 'test/commands/report-browser.test.ts' "${MAIN_NODE_ONLY[@]}") || { r=$?; [ "$rc" = 0 ] && rc=$r; }
  done
fi

node -e '
  const fs = require("fs"), path = require("path");
  let passed = 0, failed = 0, skipped = 0;
  const files = fs.readdirSync(process.argv[1]).filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) { failed = 1; console.error("[test] no vitest results"); }
  for (const name of files) {
    let p = 0, f = 0, s = 0;
    try {
      const r = JSON.parse(fs.readFileSync(path.join(process.argv[1], name), "utf8"));
      p = r.numPassedTests || 0; f = r.numFailedTests || 0;
      // a file that failed before running any test (an import error) counts as one failure
      for (const t of r.testResults || []) if (t.status === "failed" && !(t.assertionResults || []).length) f += 1;
      s = (r.numPendingTests || 0) + (r.numTodoTests || 0);
      // name each failure, so that the tail of the output says which test failed
      for (const t of r.testResults || []) for (const a of t.assertionResults || [])
        if (a.status === "failed") console.error(`[test] FAILED ${name.replace(/\.json$/, "")}: ${path.relative(process.cwd(), t.name)} › ${a.fullName || a.title}\n         ${String((a.failureMessages || [])[0] || "").split("\n")[0].slice(0, 300)}`);
    } catch (e) { f = 1; console.error(`[test] could not read vitest results ${name}: ${e.message}`); }
    console.error(`[test] ${name.replace(/\.json$/, "")}: ${p} passed, ${f} failed, ${s} skipped`);
    passed += p; failed += f; skipped += s;
  }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
' "$results_dir"
exit $rc
