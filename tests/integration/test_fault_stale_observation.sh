#!/usr/bin/env bash
# test_fault_stale_observation - depfs-recovery must not act on a server's
# answer that predates the server's return to UP. A server stalled past
# its bound (SIGSTOP) demotes itself and answers "rebuilding, stalled";
# depfs-recovery rejoins it. A decision round that took that answer before
# the rejoin ended and reads the MDS after it (decide_lag: the round waits
# between the two, as a descheduled daemon does) used to call the server
# rebuilding again at the MDS while the server was UP and serving reads:
# writers that learnt the new state wrote around it, and a reader that had
# not learnt it read its stale units (make test, 2026-12-07: 64 KiB stale right
# after an fsync in test_fault_stale_mark). A writer/reader pair checks
# every piece right after its fsync through three such stalls, and the
# logs must show every change out of UP at the MDS after the server's own
# (serve_order.py, in scrub_clean).
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
export DEPFS_FAULTS=decide_lag # only depfs-recovery has the point
cluster_up --servers 8
grep -q "fault point decide_lag armed" "$DEPFS_STATE/logs/recovery.log" ||
  fail "depfs-recovery did not arm decide_lag"
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c $((4 * 6 * 65536)) /dev/urandom > "$DEPFS_STATE/ref"
cp "$DEPFS_STATE/ref" "$MNT/d/f" && sync "$MNT/d/f"
read -r S1 S2 S3 < <(depfs layout get --json /d/f | json_get servers.0 servers.2 servers.5)
T=$(conf_ms request_timeout_ms 2000)
STOP_MS=$((2 * T + 300)) # past the server's stall bound and the writer's two timeouts
MARK_SECONDS=40
python3 "$TOP/tests/integration/stalemark.py" --lib "$LIBDEPFS_SO" --conf "$CONF" --path /d/f \
  --seconds "$MARK_SECONDS" --started "$DEPFS_STATE/started" > "$DEPFS_STATE/mark.out" 2> "$DEPFS_STATE/mark.err" &
pid=$!
for _ in $(seq 100); do [ -e "$DEPFS_STATE/started" ] && break; sleep 0.1; done
for S in $S1 $S2 $S3; do
  kill -0 "$pid" 2>/dev/null || break
  before=$(rejoins_of "$S")
  log "SIGSTOP server $S for $STOP_MS ms"
  S_PID=$(cat "$DEPFS_STATE/pids/ioserver-$S.pid")
  kill -STOP "$S_PID"; sleep "$(awk -v ms="$STOP_MS" 'BEGIN { print ms / 1000 }')"; kill -CONT "$S_PID"
  wait_rejoined "$S" "$before" 60
  sleep 3 # the rounds after the rejoin: the ones that took an older answer
done
rc=0; wait "$pid" || rc=$?
cat "$DEPFS_STATE/mark.out"
[ "$rc" = 0 ] || fail "a read right after an fsync returned stale bytes (see above)"
for S in $S1 $S2 $S3; do
  log "server $S: $(rejoins_of "$S") rejoins for its one stall"
done
wait_all_up 60 || fail "servers not up: $(states_line)"
scrub_clean
echo "PASS: three servers stalled and rejoined under a writer while depfs-recovery decided on late observations: every read right after its fsync exact, and the MDS never called a serving server out of service"
