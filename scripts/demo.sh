#!/usr/bin/env bash
# The README's main job, on the embedded default: a simulated node, a scripted drain, then status.
#
#   npm run demo              (after `npm ci && npm run build`)
#
# 1. starts `podctl simulator` in the background on a PRIVATE socket in a temp dir, seeded with a
#    demo node of a few dozen pods (static control-plane pods, critical add-ons, workloads with
#    SIGTERM-ignoring containers, preStop hooks, mixed priorities and grace periods);
# 2. shows the drain plan (`podctl drain --dry-run`), then runs `podctl drain` with progress on stderr;
# 3. shows `podctl status`;
# 4. stops the simulator and removes the temp dir, says what the drain did, and prints the path of
#    its report (`podctl drain --report`: one HTML page of where its time went) last, on stdout.
#
# Every podctl call passes --runtime-endpoint and --state-dir explicitly, so the demo never talks to
# a real container runtime on this machine, even when one is running.
#
# Environment: DEMO_PODS (default 36), DEMO_TIME_SCALE (simulated-time factor, default 0.25),
# DEMO_GRACE (drain budget in seconds, default 20), DEMO_CRITICAL_GRACE (default 5), DEMO_REPORT
# (where the drain's report goes, default $TMPDIR/podctl-demo-report.html; it outlives the demo).
# Exit code: the drain's (0 every pod terminated, 5 some did not, 3 its bound cut it short), or 1 if
# the demo could not start.
set -euo pipefail
cd "$(dirname "$0")/.."

PODS=${DEMO_PODS:-36}
SCALE=${DEMO_TIME_SCALE:-0.25}
GRACE=${DEMO_GRACE:-20}
CRITICAL=${DEMO_CRITICAL_GRACE:-5}
REPORT=${DEMO_REPORT:-${TMPDIR:-/tmp}/podctl-demo-report.html}

if [ ! -f dist/commands/drain.js ] || [ ! -f oclif.manifest.json ]; then
  echo "demo: podctl is not built; run: npm ci && npm run build" >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/podctl-demo.XXXXXX")
sock="$dir/cri.sock"
state="$dir/state"
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
    kill -TERM "$sim_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$sim_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$sim_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

podctl() { node bin/run.js "$@" --runtime-endpoint "unix://$sock" --state-dir "$state"; }
# bold headings on a terminal only: no colour codes into a pipe or a file (nor with NO_COLOR)
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then
  step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
else
  step() { printf '\n== %s\n' "$*" >&2; }
fi

for real in /run/containerd/containerd.sock /var/run/crio/crio.sock /var/run/cri-dockerd.sock; do
  if [ -S "$real" ]; then
    echo "demo: a real container runtime socket exists at $real; the demo leaves it alone and uses its own simulator." >&2
  fi
done

step "podctl simulator: a simulated node with $PODS pods on $sock (private to this demo)"
# simulated time is scaled: say so, or a 120 s grace that passes in seconds would look like a bug
echo "demo: simulated time runs at --time-scale $SCALE: every simulated wait is $(awk -v s="$SCALE" 'BEGIN { printf "%g", 1 / s }')× shorter than real time (a pod's 120s grace passes in $(awk -v s="$SCALE" 'BEGIN { printf "%g", 120 * s }')s); podctl's own bounds and clocks are real time" >&2
node bin/run.js simulator --socket "$sock" --pods "$PODS" --time-scale "$SCALE" --state-dir "$state" >"$dir/simulator.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do
  [ -S "$sock" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { echo "demo: the simulator did not start:" >&2; cat "$dir/simulator.log" >&2; exit 1; }
  sleep 0.1
done
[ -S "$sock" ] || { echo "demo: the simulator socket did not appear within 10s" >&2; cat "$dir/simulator.log" >&2; exit 1; }

step "podctl status  (before)"
podctl status

step "podctl drain --dry-run --grace-period $GRACE --critical-grace-period $CRITICAL  (the plan: priority groups, critical pods last)"
podctl drain --dry-run --grace-period "$GRACE" --critical-grace-period "$CRITICAL"

step "podctl drain --grace-period $GRACE --critical-grace-period $CRITICAL --yes --report $REPORT"
set +e
# --yes: the simulated node has static and system-critical pods, which a drain over CRI stops only
# with consent (asked on a terminal, refused without one)
podctl drain --grace-period "$GRACE" --critical-grace-period "$CRITICAL" --yes --report "$REPORT"
rc=$?
set -e

step "podctl status  (after)"
podctl status

case $rc in
  0) what="the drain terminated every pod" ;;
  5) what="the drain ended with pods that did not terminate (the report names what holds each)" ;;
  3) what="the drain's time bound ran out before every pod terminated" ;;
  130) what="the drain was interrupted" ;;
  *) what="the drain failed (exit code $rc)" ;;
esac
# in numbers, from the drain's report: how long, and how many pods ignored SIGTERM until their deadline
numbers=$(podctl report -o json 2>/dev/null | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    try { const r = JSON.parse(s), k = r.summary.killedAtDeadline;
      console.log(`${r.summary.terminated} of ${r.summary.pods} in ${(r.wallMs / 1000).toFixed(1)} s; ${k === 0 ? "every container exited on SIGTERM" : `${k} SIGKILLed at their grace deadline: they ignored SIGTERM`}`);
    } catch {} });' || true)
step "done: $what${numbers:+ ($numbers)}; stopping the simulator"
if [ -f "$REPORT" ]; then
  echo "demo: where the drain's time went, one page to open in a browser:" >&2
  echo "$REPORT"
fi
exit "$rc"
