#!/usr/bin/env bash
# test_fault_boot_order - the whole cluster crashes and comes back with its
# I/O servers before the MDS, as nodes of a real cluster boot in any order.
# Each server then cannot confirm it is still up, demotes itself, and must
# be rejoined; depfs-recovery starts with all of them to rejoin at once,
# while every rejoin moves the cluster epoch on. Each server must be
# rejoined once: a heartbeat answer taken before a rejoin of ours ended
# says nothing about the server after it (recovery/decide.c), and acting
# on one takes a server that serves out of service again for nothing.
# Every byte must read back and scrub must be clean.
source "$(dirname "$0")/lib.sh"
require_recovery
ROUNDS=2
cluster_up
head -c $((24 << 20)) /dev/urandom > "$DEPFS_STATE/data"
depfs cp "$DEPFS_STATE/data" depfs@8@6:/f || fail "copy in failed"
ids=$(awk '$1 == "ioserver" {print $3}' "$CONF")
lease_s=$(awk -v ms="$(conf_ms request_timeout_ms 2000)" 'BEGIN { print ms / 1000 + 1 }')
for round in $(seq "$ROUNDS"); do
  log "round $round: every I/O server, the MDS and depfs-recovery killed at once"
  pids=()
  for name in recovery mds $(printf 'ioserver-%s ' $ids); do
    pids+=("$(cat "$DEPFS_STATE/pids/$name.pid")")
  done
  kill -KILL "${pids[@]}"
  for pid in "${pids[@]}"; do
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pid" 2>/dev/null || fail "pid $pid outlived SIGKILL"
  done
  declare -A before=()
  for id in $ids; do before[$id]=$(rejoins_of "$id"); done
  log "round $round: the I/O servers start first; the MDS ${lease_s} s later"
  for id in $ids; do lc restart "$id" >/dev/null || fail "restart of server $id failed"; done
  sleep "$lease_s"
  for id in $ids; do
    grep "server $id listening on" "$DEPFS_STATE/logs/ioserver-$id.log" | tail -n 1 |
      grep -q "state rebuilding" || fail "server $id serves without its MDS's word"
  done
  lc restart mds >/dev/null || fail "restart of the MDS failed"
  lc restart recovery >/dev/null || fail "restart of depfs-recovery failed"
  wait_all_up 120 || fail "servers not up: $(states_line)"
  sleep 3 # a few heartbeats: a late needless rejoin shows by then
  for id in $ids; do
    n=$(( $(rejoins_of "$id") - ${before[$id]} ))
    [ "$n" -eq 1 ] || fail "round $round: server $id was rejoined $n times after one start (taken out of service again on a stale answer): $(grep -h "ioserver $id" "$DEPFS_STATE/logs/recovery.log" | tail -n 6)"
  done
  log "round $round: every server rejoined once"
done
wait_mount_caches
cmp "$DEPFS_STATE/data" "$MNT/f" || fail "/f differs from what was written"
scrub_clean
echo "PASS: the cluster restarted servers-first $ROUNDS times: every server demoted itself, was rejoined once, every byte right, scrub clean"
