#!/usr/bin/env bash
# test_fault_degraded - SIGKILL of I/O servers at random moments during a
# write-and-read workload on files of layouts 8@6, 8@7 and 4@2 (8 servers).
#  1. one server dies mid-workload: every acknowledged write reads back right
#     (through the mount and through a fresh libdepfs client that must
#     decode), its detection time is measured against t_HB + 2*t_T, and a
#     libdepfs reader racing a libdepfs writer never sees a decode that mixed
#     units from before and after a write;
#  2. a second one dies (n-k for 8@6 and 4@2): those keep working; 8@7 files
#     are past their parity: their reads must be right or EIO, never wrong;
#  3. both come back with `restart --rebuild`; every server "up" within a
#     bounded wait; everything reads right;
#  4. the restored units equal decoding: other servers are killed so reads
#     decode through the restored units, and everything still reads right;
#     then scrub is clean.
# DEPFS_FAULT_SEED reproduces a run's random choices.
source "$(dirname "$0")/lib.sh"
require_recovery
SEED=${DEPFS_FAULT_SEED:-$(( $(date +%s) % 30000 ))}
RANDOM=$SEED
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
REBUILD_WAIT_S=180
DETECT_POLL_SLACK_MS=1000  # one status round trip + the poll interval

random_sleep() { local ms=$(( $1 + RANDOM % ($2 - $1) )); sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"; }
pick_other() { # pick_other EXCLUDED...: a random server id not among them
  local id
  while :; do id=$((RANDOM % 8)); [[ " $* " == *" $id "* ]] || { echo "$id"; return; }; done
}
# kill_during_workload VICTIM SECONDS SEED WORKLOAD_ARGS...: runs the
# workload in the background, SIGKILLs VICTIM 1-4 s into it, waits for it,
# and measures the detection time.
kill_during_workload() {
  local victim=$1 secs=$2 seed=$3; shift 3
  python3 "$FAULTLOAD" run "$MNT" "$REF" --seconds "$secs" --seed "$seed" "$@" >"$DEPFS_STATE/wl.out" 2>&1 &
  local wl=$!
  random_sleep 1000 4000
  local t_kill
  t_kill=$(now_ms)
  "$LC" kill "$victim"
  log "SIGKILLed I/O server $victim during the workload"
  local took bound
  bound=$(detect_bound_ms)
  took=$(wait_state "$victim" down 60) || { kill "$wl" 2>/dev/null; fail "server $victim never shown down"; }
  took=$(( $(now_ms) - t_kill ))
  log "server $victim detected down ${took} ms after SIGKILL (t_HB + 2*t_T = ${bound} ms)"
  [ "$took" -le $(( bound + DETECT_POLL_SLACK_MS )) ] ||
    { kill "$wl" 2>/dev/null; fail "detection took ${took} ms > t_HB + 2*t_T = ${bound} ms (+${DETECT_POLL_SLACK_MS} ms polling)"; }
  if ! wait "$wl"; then cat "$DEPFS_STATE/wl.out"; fail "workload failed with server(s) down"; fi
  cat "$DEPFS_STATE/wl.out"
}

log "seed $SEED"
cluster_up --servers 8
for spec in 8@6 8@7 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
ALL=L8_6,L8_7,L4_2
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs "$ALL" --files 4 --seed "$SEED" || fail "populate failed"
verify_all "$REF"

# ---- 1. one server down
V1=$(pick_other)
log "phase 1: kill server $V1 at a random moment of a workload on every layout"
kill_during_workload "$V1" 10 $((SEED + 1)) --write-dirs "$ALL" --read-dirs "$ALL"
log "every acknowledged write with server $V1 down reads back right?"
verify_all "$REF"

log "a libdepfs reader racing a libdepfs writer on an 8@6 file (decoding reads)"
RACE="$DEPFS_STATE/race"
rm -f "$RACE" "$RACE.gen"
python3 "$FAULTLOAD" race-writer --lib "$LIBDEPFS_SO" --conf "$CONF" --path /L8_6/race \
  --bytes $((8 * 393216)) --seconds 6 --ready "$RACE" >"$DEPFS_STATE/rw.out" 2>&1 &
rw=$!
for _ in $(seq 100); do [ -e "$RACE" ] && break; kill -0 $rw 2>/dev/null || break; sleep 0.1; done
[ -e "$RACE" ] || { cat "$DEPFS_STATE/rw.out"; fail "race writer did not start"; }
python3 "$FAULTLOAD" race-reader --lib "$LIBDEPFS_SO" --conf "$CONF" --path /L8_6/race \
  --bytes $((8 * 393216)) --seconds 5 --ready "$RACE" --seed "$SEED" || { kill $rw; fail "race reader saw wrong bytes"; }
wait $rw || { cat "$DEPFS_STATE/rw.out"; fail "race writer failed with server $V1 down"; }
cat "$DEPFS_STATE/rw.out"
depfs rm /L8_6/race >/dev/null 2>&1 || rm -f "$MNT/L8_6/race"

# ---- 2. a second server down: n-k for 8@6 and 4@2, one past n-k for 8@7
V2=$(pick_other "$V1")
log "phase 2: kill server $V2 too (8@7 files are now past their parity: right bytes or EIO)"
kill_during_workload "$V2" 10 $((SEED + 2)) --write-dirs L8_6,L4_2 --read-dirs L8_6,L4_2 --eio-ok-dirs L8_7
verify_all "$REF" --eio-ok-dirs L8_7

# ---- 3. restart with --rebuild
log "phase 3: restart $V1 and $V2 with --rebuild"
"$LC" restart "$V1" --rebuild
"$LC" restart "$V2" --rebuild
wait_all_up "$REBUILD_WAIT_S"
settle_clients
verify_all "$REF"

# ---- 4. restored units equal decoding
O1=$(pick_other "$V1" "$V2")
log "phase 4: kill server $O1: reads of every layout decode through the restored units of $V1 and $V2"
kill_down "$O1"
verify_all "$REF"
O2=$(pick_other "$V1" "$V2" "$O1")
log "... and server $O2 (8@6 and 4@2 must still read right)"
kill_down "$O2"
verify_all "$REF" --eio-ok-dirs L8_7
"$LC" restart "$O1" --rebuild
"$LC" restart "$O2" --rebuild
wait_all_up "$REBUILD_WAIT_S"
settle_clients
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: acknowledged data right with 1 and 2 servers SIGKILLed (8@7 past parity: EIO, never wrong bytes); rebuilt units equal decoding; scrub clean (seed $SEED)"
