#!/usr/bin/env bash
# test_fault_partition - an I/O server cut off from the network without
# being killed. Server S runs in a network namespace of its own (netns.sh:
# a veth pair with addresses from 10.214.X.0/30 and a blackhole guard route,
# so traffic stays between this host's namespaces); the MDS listens on the
# host side of the veth, the rest of the cluster (7 I/O servers, recovery,
# FUSE mount) runs on 127.0.0.1; local-cluster's pid/cmd files are kept so
# its kill/restart/down work on this cluster too.
# First, depfs-recovery is paused past S's lease: S must confirm itself with
# the MDS and stay up (it cannot if the MDS is out of its reach).
# The cut: the namespace side of the veth goes down, so the host side has no
# carrier and every packet to or from S is silently dropped (S's sockets see
# nothing: a real partition, not a crash). Expect: S detected down within
# t_HB + 2*t_T (measured from the MDS's log), a workload on 8@6 and 4@2
# files goes on, and after the link returns the recovery module takes S
# through rebuilding to up; every byte right, S's units equal decoding,
# scrub clean. Exit 77 (skip) if network namespaces cannot be made here.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/netns.sh"
require_recovery
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
SERVERS=8
S=${DEPFS_PARTITION_SERVER:-3}
REBUILD_WAIT_S=180
DETECT_LOG_SLACK_MS=300 # log timestamps vs this shell's clock
trap 'rc=$?; set +e; cluster_down; netns_cleanup; (exit $rc); on_exit' EXIT
netns_setup
netns_cluster_up "$S" "$SERVERS"

for spec in 8@6 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6,L4_2 --files 6 --seed 21 || fail "populate failed"
verify_all "$REF"

# ---- depfs-recovery paused past S's lease: S must ask the MDS itself (over
# the veth, as from another host), hear that it is up, and keep serving
LEASE_MS=$(conf_ms request_timeout_ms 2000) # ioserver/lease.c: the lease is the request timeout
rec_pid=$(cat "$DEPFS_STATE/pids/recovery.pid")
kill -STOP "$rec_pid"
sleep $(( LEASE_MS / 1000 + 2 ))
kill -CONT "$rec_pid"
s_log="$DEPFS_STATE/logs/ioserver-$S.log"
if grep -q "may have been written around" "$s_log"; then
  grep "may have been written around" "$s_log" | tail -1
  fail "server $S demoted itself while depfs-recovery was paused, though the MDS was up (line above)"
fi
wait_all_up 30
log "server $S confirmed itself with the MDS while depfs-recovery was paused $(( LEASE_MS / 1000 + 2 )) s"

# ---- the cut
mds_log="$DEPFS_STATE/logs/mds.log"
before=$(grep -c "ioserver $S .*-> down" "$mds_log" || true)
t_cut=$(now_ms)
netns_cut
log "cut server $S off (link $NETNS_VN down inside $NETNS_NS); the process is alive: $(ps -o pid=,stat= -p "$(cat "$DEPFS_STATE/pids/ioserver-$S.pid")")"
python3 "$FAULTLOAD" run "$MNT" "$REF" --seconds 15 --seed 22 --write-dirs L8_6,L4_2 --read-dirs L8_6,L4_2 \
  >"$DEPFS_STATE/wl.out" 2>&1 &
wl=$!
took=$(wait_state "$S" down 60) || fail "server $S never shown down after the cut"
line=
for _ in $(seq 600); do
  line=$(grep "ioserver $S .*-> down" "$mds_log" | sed -n "$((before + 1))p" || true)
  [ -n "$line" ] && break
  sleep 0.1
done
[ -n "$line" ] || fail "no 'ioserver $S ... -> down' line in the MDS log 60 s after the cut (depfs status called it down: this client cannot reach it)"
t_down=$(( $(date -d "$(echo "$line" | cut -c1-23)" +%s%3N) ))
t_d=$(( t_down - t_cut ))
bound=$(detect_bound_ms)
log "RESULT detection: MDS marked server $S down ${t_d} ms after the cut ($line); depfs status showed it after ${took} ms of polling; t_HB + 2*t_T = ${bound} ms"
[ "$t_d" -le $(( bound + DETECT_LOG_SLACK_MS )) ] || fail "detection took ${t_d} ms > t_HB + 2*t_T = ${bound} ms"
kill -0 "$(cat "$DEPFS_STATE/pids/ioserver-$S.pid")" || fail "server $S died; it was only to be cut off"
wait "$wl" || { cat "$DEPFS_STATE/wl.out"; fail "the workload failed while server $S was cut off"; }
cat "$DEPFS_STATE/wl.out"
verify_all "$REF"

# ---- the link returns
log "link $NETNS_VN up again"
netns_heal
wait_all_up "$REBUILD_WAIT_S"
settle_clients
grep "ioserver $S " "$mds_log" | tail -5
sed -n "/ioserver $S .*-> down/,\$p" "$mds_log" | grep "ioserver $S " | grep -q -- "-> rebuilding" ||
  fail "server $S came back without going through 'rebuilding' (MDS log above)"
verify_all "$REF"

# ---- S's units equal decoding: two other servers down, every read decodes through S
O1=$(( (S + 1) % SERVERS )); O2=$(( (S + 4) % SERVERS ))
log "kill servers $O1 and $O2: reads decode through server $S's units"
kill_down "$O1"; kill_down "$O2"
verify_all "$REF"
"$LC" restart "$O1" --rebuild; "$LC" restart "$O2" --rebuild
wait_all_up "$REBUILD_WAIT_S"
settle_clients
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: server $S cut off (not killed): detected in ${t_d} ms (bound ${bound} ms), writes went on, rebuilt through 'rebuilding' to up; data right; scrub clean"
