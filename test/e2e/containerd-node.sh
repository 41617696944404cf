#!/usr/bin/env bash
# containerd-node.sh - podctl's private, throwaway containerd (CRI v1) "node" for the end-to-end
# suite (test/e2e) and the CRI benchmark. scripts/test.sh and .ci/run call `up` before vitest and
# `down` after it; the socket that `up` prints becomes PODCTL_E2E_SOCKET.
#
#   containerd-node.sh up            install what is missing, build the test image, write the
#                                    config, start containerd, import the image; prints the socket
#   containerd-node.sh down          remove every pod, stop containerd by its recorded PID,
#                                    kill any shim it left (by recorded PID), unmount leftovers
#   containerd-node.sh down --purge  the same, then delete $NODE_DIR
#   containerd-node.sh status        is it running; socket; pod count
#
# Everything lives under $NODE_DIR (default /tmp/podctl-node): config, root, state, logs, image,
# CNI plugins, PID file; up/down serialize on the lock file $NODE_DIR.lock. Outside it only: apt
# packages, the shim sockets containerd 1.6 always puts in /run/containerd/s, and per-container
# cgroups under /sys/fs/cgroup/*/k8s.io (both go when the pods do).
#
# Invariants, each learned on machines like the CI's (no systemd, no CAP_SYS_RESOURCE, no registry):
# - the only image is localhost/podctl-test/pause:1.0, built here from image/pause.c (a static
#   program that exits on SIGTERM, ignores it, or exits N s after it) and imported; it is also the
#   sandbox ("pause") image, so nothing is ever pulled;
# - restrict_oom_score_adj = true (runc cannot lower oom_score_adj without CAP_SYS_RESOURCE);
# - containerd is started with setsid and stopped by its recorded PID, never by name; a PID is
#   trusted only while its command line names this node's config;
# - `down` removes pods before stopping containerd, then kills only shims that this node's task
#   bundles name, so two nodes (different NODE_DIRs) never touch each other;
# - host-network pods must be created with an empty hostname (containerd rejects one otherwise).
# Needs root. Re-runnable: `up` on a running node only refreshes the image and checks CRI;
# `down` on a stopped node only sweeps leftovers.
#
# Environment: NODE_DIR, KEEP_PODS=1 (down: leave pods and shims running),
#              SNAPSHOTTER=overlayfs|native (skip the overlay probe).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE_DIR_GIVEN=${NODE_DIR:-/tmp/podctl-node}
NODE_DIR=${NODE_DIR_GIVEN%/}
SOCK=$NODE_DIR/containerd.sock
PIDFILE=$NODE_DIR/containerd.pid
CONFIG=$NODE_DIR/etc/containerd.toml
LOG=$NODE_DIR/logs/containerd.log
IMAGE=localhost/podctl-test/pause:1.0
TASKS=$NODE_DIR/state/io.containerd.runtime.v2.task

say() { echo "[node] $*" >&2; }
die() { echo "[node] error: $*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# ctr against our socket; without a connect timeout ctr waits 10 s for a missing socket
c() { ctr --connect-timeout 2s -a "$SOCK" "$@"; }
serving() { [ -S "$SOCK" ] && c version >/dev/null 2>&1; }

check_node_dir() {
  case "$NODE_DIR" in
    /?*) ;;
    *) die "NODE_DIR must be an absolute path other than / (got '$NODE_DIR_GIVEN')" ;;
  esac
  case "$NODE_DIR" in
    *[[:space:]]*) die "NODE_DIR must not contain whitespace" ;;
  esac
  # unix socket paths are limited to 107 bytes; the ttrpc socket is the longest we create
  [ ${#SOCK} -le 100 ] || die "NODE_DIR is too long for a unix socket path: $SOCK.ttrpc"
}

# PID of the containerd this script started for $NODE_DIR, or nothing.
# A PID is trusted only if that process is containerd running our config file.
our_pid() {
  local pid
  [ -f "$PIDFILE" ] || return 0
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [ -r "/proc/$pid/cmdline" ] || return 0
  if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "--config $CONFIG "; then echo "$pid"; fi
}

# ---------------------------------------------------------------------------- up

ensure_packages() {
  local need="" p
  for p in containerd runc gcc libc6-dev; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || need="$need $p"
  done
  command -v ip >/dev/null 2>&1 || need="$need iproute2"          # test CNI loopback plugin
  if [ -n "$need" ]; then
    local t0; t0=$(now_ms)
    say "apt-get install:$need"
    apt-get update -qq || say "warning: apt-get update failed; trying the cached package lists"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
    say "packages installed in $(( $(now_ms) - t0 )) ms"
  fi
  command -v containerd >/dev/null && command -v ctr >/dev/null && [ -x /usr/sbin/runc ] \
    || die "containerd/ctr/runc not found after install"
}

choose_snapshotter() {
  if [ -n "${SNAPSHOTTER:-}" ]; then echo "$SNAPSHOTTER"; return; fi
  local o=$NODE_DIR/.overlay-probe
  rm -rf "$o"; mkdir -p "$o/l" "$o/u" "$o/w" "$o/m"
  if mount -t overlay overlay -o "lowerdir=$o/l,upperdir=$o/u,workdir=$o/w" "$o/m" 2>/dev/null; then
    umount "$o/m"; echo overlayfs
  else
    echo native
  fi
  rm -rf "$o"
}

# Static /pause in a one-layer docker-archive, built reproducibly (fixed mtimes and owners),
# so the image digest only changes when pause.c does.
build_image() {
  local dir=$NODE_DIR/image src=$HERE/image/pause.c sum
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  if [ -f "$dir/pause-image.tar" ] && [ "$(cat "$dir/source.sha256" 2>/dev/null)" = "$sum" ]; then
    return 0
  fi
  say "building test image $IMAGE"
  rm -rf "$dir"; mkdir -p "$dir/rootfs/etc" "$dir/rootfs/dev" "$dir/rootfs/proc" "$dir/rootfs/sys" \
    "$dir/rootfs/tmp" "$dir/archive"
  gcc -static -Os -s -o "$dir/rootfs/pause" "$src"
  echo 'root:x:0:0:root:/:/pause' > "$dir/rootfs/etc/passwd"
  echo 'root:x:0:' > "$dir/rootfs/etc/group"
  local tarflags=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner)
  tar "${tarflags[@]}" -C "$dir/rootfs" -cf "$dir/layer.tar" .
  local layer config
  layer=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
  mkdir -p "$dir/archive/$layer"; mv "$dir/layer.tar" "$dir/archive/$layer/layer.tar"
  printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["/pause"],"Env":["PATH=/"],"WorkingDir":"/","User":"0:0"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"podctl test/e2e/containerd-node.sh"}]}' \
    "$layer" > "$dir/config.json"
  config=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
  mv "$dir/config.json" "$dir/archive/$config.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$config" "$IMAGE" "$layer" \
    > "$dir/archive/manifest.json"
  tar "${tarflags[@]}" -C "$dir/archive" -cf "$dir/pause-image.tar" .
  echo "$sum" > "$dir/source.sha256"
}

# Test-only CNI: pod-network pods get a private netns with just "lo" (nothing leaves the pod).
# containerd's CRI always runs a "loopback" plugin as well as the configured network.
write_cni() {
  mkdir -p "$NODE_DIR/cni/bin" "$NODE_DIR/cni/net.d"
  cat > "$NODE_DIR/cni/bin/loopback" <<'EOF'
#!/bin/sh
# test CNI plugin: bring lo up inside the pod netns
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
ADD)     cat >/dev/null
         nsenter --net="$CNI_NETNS" ip link set lo up || exit 1
         printf '{"cniVersion":"0.3.1","interfaces":[{"name":"lo","sandbox":"%s"}],"ips":[{"version":"4","address":"127.0.0.1/8","interface":0}],"dns":{}}\n' "$CNI_NETNS" ;;
DEL|CHECK) cat >/dev/null ;;
*)       echo '{"cniVersion":"0.4.0","code":4,"msg":"unknown CNI_COMMAND"}'; exit 1 ;;
esac
EOF
  cat > "$NODE_DIR/cni/bin/podctl-noop" <<'EOF'
#!/bin/sh
# test CNI plugin: report 127.0.0.1 as the pod IP, configure nothing
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
ADD)     cat >/dev/null
         printf '{"cniVersion":"0.4.0","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","address":"127.0.0.1/8","interface":0}],"dns":{}}\n' "$CNI_IFNAME" "$CNI_NETNS" ;;
DEL|CHECK) cat >/dev/null ;;
*)       echo '{"cniVersion":"0.4.0","code":4,"msg":"unknown CNI_COMMAND"}'; exit 1 ;;
esac
EOF
  chmod 0755 "$NODE_DIR/cni/bin/loopback" "$NODE_DIR/cni/bin/podctl-noop"
  echo '{"cniVersion":"0.4.0","name":"podctl-noop","plugins":[{"type":"podctl-noop"}]}' \
    > "$NODE_DIR/cni/net.d/10-podctl-noop.conflist"
}

write_config() {
  local snap=$1 tmp
  mkdir -p "$NODE_DIR/etc"
  tmp=$(mktemp "$NODE_DIR/etc/.containerd.toml.XXXXXX")
  cat > "$tmp" <<EOF
# generated by podctl test/e2e/containerd-node.sh; private to $NODE_DIR
version = 2
root  = "$NODE_DIR/root"
state = "$NODE_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  level = "info"
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  disable_apparmor = true
  # Required here: the VM lacks CAP_SYS_RESOURCE, and runc cannot lower a process's
  # oom_score_adj below its parent's (the sandbox asks for -998) without it.
  restrict_oom_score_adj = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  disable_tcp_service = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snap"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$NODE_DIR/runc-root"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$NODE_DIR/cni/bin"
    conf_dir = "$NODE_DIR/cni/net.d"
    max_conf_num = 1
EOF
  if [ -f "$CONFIG" ] && cmp -s "$tmp" "$CONFIG"; then rm -f "$tmp"; return 0; fi
  mv "$tmp" "$CONFIG"
  CONFIG_CHANGED=1
}

write_env_file() {
  cat > "$NODE_DIR/env" <<EOF
# source this file to point tools (crictl, ctr, podctl) at the podctl test node
export NODE_DIR=$NODE_DIR
export CRI_SOCKET=$SOCK
export CONTAINER_RUNTIME_ENDPOINT=unix://$SOCK
export PODCTL_TEST_IMAGE=$IMAGE
EOF
}

start_containerd() {
  local t0 pid i
  if serving; then
    die "a containerd that this script did not record is serving $SOCK; stop it (by its PID) first"
  fi
  rm -f "$SOCK" "$SOCK.ttrpc"
  mkdir -p "$NODE_DIR/logs/pods"
  echo "=== $(date -Is) containerd-node.sh start" >> "$LOG"
  t0=$(now_ms)
  setsid containerd --config "$CONFIG" >> "$LOG" 2>&1 < /dev/null 9>&- &
  pid=$!
  echo "$pid" > "$PIDFILE"
  for i in $(seq 1 1500); do
    if serving; then break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  if ! kill -0 "$pid" 2>/dev/null || ! serving; then
    tail -n 20 "$LOG" >&2
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    rm -f "$PIDFILE"
    die "containerd did not come up (log: $LOG)"
  fi
  [ "$(our_pid)" = "$pid" ] || die "PID $pid is not the containerd just started (setsid forked?)"
  STARTED_MS=$(( $(now_ms) - t0 ))
  STARTED_T0=$t0
  say "containerd pid $pid serving $SOCK after ${STARTED_MS} ms"
}

# Listing into a variable (not `ctr … | grep -q`): with pipefail, grep leaving early can fail the
# pipe. The listing is retried briefly: under load the import can land a moment after ctr returns.
image_present() { local names; names=$(c -n k8s.io images ls -q 2>/dev/null) || return 1; grep -qxF "$IMAGE" <<<"$names"; }

import_image() {
  local snap=$1 i out
  for i in 1 2 3; do
    if out=$(c -n k8s.io images import --snapshotter "$snap" "$NODE_DIR/image/pause-image.tar" 2>&1); then break; fi
    say "image import failed (attempt $i): $out"
    sleep 0.5
  done
  for i in $(seq 1 20); do
    image_present && return 0
    sleep 0.1
  done
  c -n k8s.io images ls >&2 || true
  die "image $IMAGE missing after import (log: $LOG)"
}

wait_cri_ready() {
  local i
  for i in $(seq 1 100); do
    if c plugins ls 2>/dev/null | grep -E 'io\.containerd\.grpc\.v1 +cri +.* ok' >/dev/null; then
      say "CRI plugin loaded"
      return 0
    fi
    sleep 0.1
  done
  die "the CRI plugin did not load; see $LOG"
}

cmd_up() {
  [ $# = 0 ] || die "up takes no arguments (set NODE_DIR, SNAPSHOTTER in the environment)"
  [ "$(id -u)" = 0 ] || die "must run as root"
  check_node_dir
  ensure_packages
  mkdir -p "$NODE_DIR"/{etc,logs/pods,opt}
  local snap pid
  CONFIG_CHANGED=0
  snap=$(choose_snapshotter)
  build_image
  write_cni
  write_config "$snap"
  write_env_file
  pid=$(our_pid)
  if [ -n "$pid" ]; then
    say "containerd already running (pid $pid)"
    [ "$CONFIG_CHANGED" = 0 ] || say "warning: config changed; run 'down' then 'up' to apply it"
  else
    rm -f "$PIDFILE"
    start_containerd
  fi
  import_image "$snap"
  wait_cri_ready
  if [ -n "${STARTED_T0:-}" ]; then
    say "node ready (snapshotter $snap): containerd API after ${STARTED_MS} ms, image+CRI after $(( $(now_ms) - STARTED_T0 )) ms"
  fi
  say "image $IMAGE; env file $NODE_DIR/env; log $LOG"
  echo "$SOCK"
}

# -------------------------------------------------------------------------- down

# Task bundles containerd keeps for live shims: <TASKS>/<namespace>/<id>/{shim.pid,init.pid,address}
task_dirs() { [ -d "$TASKS" ] && find "$TASKS" -mindepth 2 -maxdepth 2 -type d 2>/dev/null || true; }

pid_alive_as() {  # pid_alive_as PID SUBSTRING: is PID alive and does its cmdline contain SUBSTRING?
  [[ "$1" =~ ^[0-9]+$ ]] && [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF -- "$2"
}

remove_pods() {
  local id
  for id in $(c -n k8s.io tasks ls -q 2>/dev/null); do
    c -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for id in $(c -n k8s.io tasks ls -q 2>/dev/null); do
    c -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
  done
  for id in $(c -n k8s.io containers ls -q 2>/dev/null); do
    c -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
  done
}

stop_containerd() {
  local pid=$1 i t0
  t0=$(now_ms)
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then say "containerd $pid ignored SIGTERM for 10 s; SIGKILL"; kill -KILL "$pid"; fi
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$PIDFILE"
  say "containerd $pid stopped in $(( $(now_ms) - t0 )) ms"
}

# Shims (and their containers) outlive containerd by design. Kill the ones this node left,
# found only through its own task bundles <TASKS>/<ns>/<id>/: the parent of each recorded
# init.pid, and any process whose argv is exactly a shim for a recorded <id> on our socket.
# Container processes go first (SIGKILL), then the shims; then their sockets and cgroups.
kill_leftover_shims() {
  local d ipid ppid addr shims="" inits="" p n=0 argv
  [ -n "$(task_dirs)" ] || return 0
  for d in $(task_dirs); do
    ipid=$(cat "$d/init.pid" 2>/dev/null || true)
    if [[ "$ipid" =~ ^[0-9]+$ ]] && [ -r "/proc/$ipid/stat" ]; then
      ppid=$(sed 's/.*) //' "/proc/$ipid/stat" | cut -d' ' -f2)
      if pid_alive_as "$ppid" "-address $SOCK"; then inits="$inits $ipid"; shims="$shims $ppid"; fi
    fi
  done
  for p in /proc/[0-9]*; do
    mapfile -d '' -t argv < "$p/cmdline" 2>/dev/null || continue
    [ "${#argv[@]}" = 7 ] && [ "${argv[0]##*/}" = containerd-shim-runc-v2 ] && [ "${argv[1]}" = -namespace ] \
      && [ "${argv[3]}" = -id ] && [ "${argv[5]}" = -address ] && [ "${argv[6]}" = "$SOCK" ] \
      && [ -d "$TASKS/${argv[2]}/${argv[4]}" ] && shims="$shims ${p#/proc/}"
  done
  for p in $inits; do kill -KILL "$p" 2>/dev/null || true; done
  for p in $(printf '%s\n' $shims | sort -u); do
    kill -KILL "$p" 2>/dev/null && n=$((n + 1))
  done
  [ "$n" = 0 ] && return 0
  say "killed $n leftover shim(s) and their containers"
  sleep 0.2
  for d in $(task_dirs); do
    addr=$(cat "$d/address" 2>/dev/null || true)
    case "$addr" in unix:///run/containerd/s/*) rm -f "${addr#unix://}" ;; esac
    rmdir /sys/fs/cgroup/*/k8s.io/"${d##*/}" 2>/dev/null || true
  done
}

unmount_leftovers() {
  local m n=0
  # deepest first; mountinfo field 5 is the mount point
  for m in $(awk -v p="$NODE_DIR/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo \
             | awk '{print length($0) " " $0}' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "warning: could not unmount $m"
    n=$((n + 1))
  done
  [ "$n" = 0 ] || say "unmounted $n leftover mount(s)"
}

cmd_down() {
  local purge=0 pid
  case "${1:-}" in
    "") ;;
    --purge) purge=1 ;;
    *) die "down: unknown argument '$1' (only --purge)" ;;
  esac
  [ "$(id -u)" = 0 ] || die "must run as root"
  check_node_dir
  if [ ! -d "$NODE_DIR" ]; then say "nothing at $NODE_DIR"; return 0; fi
  pid=$(our_pid)
  if [ -z "$pid" ] && [ "${KEEP_PODS:-}" != 1 ] && [ -f "$CONFIG" ] && [ -n "$(task_dirs)" ]; then
    say "containerd is not running but pods are left; starting it to remove them"
    start_containerd
    pid=$(our_pid)
  fi
  if [ -n "$pid" ]; then
    [ "${KEEP_PODS:-}" = 1 ] || remove_pods
    stop_containerd "$pid"
  else
    rm -f "$PIDFILE"
    say "containerd not running"
  fi
  if [ "${KEEP_PODS:-}" != 1 ]; then
    kill_leftover_shims
    unmount_leftovers
  fi
  rm -f "$SOCK" "$SOCK.ttrpc"
  if [ "$purge" = 1 ]; then
    [ "${KEEP_PODS:-}" != 1 ] || die "--purge with KEEP_PODS=1 makes no sense"
    if awk -v p="$NODE_DIR/" 'index($5, p) == 1 {f=1} END {exit !f}' /proc/self/mountinfo; then
      die "mounts remain under $NODE_DIR; not deleting it"
    fi
    rm -rf --one-file-system "$NODE_DIR"
    say "removed $NODE_DIR"
  fi
}

# ------------------------------------------------------------------------ status

cmd_status() {
  local pid
  pid=$(our_pid)
  if [ -z "$pid" ]; then echo "stopped ($NODE_DIR)"; return 3; fi
  echo "running pid=$pid socket=$SOCK"
  c -n k8s.io containers ls
}

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

# One up/down at a time per NODE_DIR (the lock file sits beside it, so --purge can't remove it).
lock() { check_node_dir; exec 9>"$NODE_DIR.lock"; flock -w 120 9 || die "another up/down holds $NODE_DIR.lock"; }

case "${1:-}" in
  up) shift; lock; cmd_up "$@" ;;
  down) shift; lock; cmd_down "$@" ;;
  status) shift; cmd_status "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
