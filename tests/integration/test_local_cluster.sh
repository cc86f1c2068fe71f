#!/usr/bin/env bash
# test_local_cluster - deploy/local-cluster stops only its own daemons. A
# state dir whose pid files are stale (its machine rebooted, or the script
# that ran its cluster was killed) may name pids that now belong to another
# cluster's daemons; `local-cluster down` (which every test's cluster_up
# runs first on its state dir) must leave those alone, and `up` must not
# take them for a cluster already running there. Before, any live process
# with "depfs-" in its command line passed for the pid file's daemon: the
# fault campaign's depfs-fuse was stopped by a test starting beside it.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 4

STALE="$DEPFS_STATE-stale"
rm -rf "$STALE"; mkdir -p "$STALE/pids"
declare -A ours=()
for f in "$DEPFS_STATE"/pids/*.pid; do
  name=$(basename "$f" .pid)
  ours[$name]=$(cat "$f")
  cp "$f" "$STALE/pids/" # the stale dir's pid files name our live daemons
done
[ "${#ours[@]}" -ge 6 ] || fail "expected at least 6 daemons, found ${#ours[@]}"

DEPFS_STATE="$STALE" "$LC" down >/dev/null 2>&1 || true
for name in "${!ours[@]}"; do
  kill -0 "${ours[$name]}" 2>/dev/null ||
    fail "local-cluster down on another state dir stopped this cluster's $name (pid ${ours[$name]})"
done
mountpoint -q "$MNT" || fail "local-cluster down on another state dir unmounted this cluster"
log "down on a state dir with stale pid files left all ${#ours[@]} daemons of this cluster alone"

# and up there starts a cluster of its own rather than refusing
rm -rf "$STALE"; mkdir -p "$STALE/pids"
cp "$DEPFS_STATE"/pids/*.pid "$STALE/pids/"
out=$(DEPFS_STATE="$STALE" DEPFS_BASE_PORT=$((DEPFS_BASE_PORT + 25)) "$LC" up --servers 2 --fresh 2>&1) ||
  fail "local-cluster up on a state dir with stale pid files failed: $(tail -3 <<<"$out")"
DEPFS_STATE="$STALE" "$LC" down >/dev/null 2>&1 || fail "could not stop the second cluster"
for name in "${!ours[@]}"; do
  kill -0 "${ours[$name]}" 2>/dev/null || fail "the second cluster's up/down stopped this cluster's $name"
done
rm -rf "$STALE"

echo hello > "$MNT/after"
[ "$(cat "$MNT/after")" = hello ] || fail "the mount does not work after the other state dir's down"
scrub_clean
echo "PASS: local-cluster up/down on a state dir with stale pid files never touch another cluster's daemons"
