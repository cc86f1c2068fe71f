#!/usr/bin/env bash
# test_fault_client_locks - a client SIGKILLed while it holds stripe locks.
# A libdepfs writer (its own process, not the mount) makes an unaligned
# partial-stripe write to an 8@6 file with DEPFS_TEST_PAUSE set, so it stops
#   after_lock      (locks taken, pre-reads done, nothing written yet), then
#   between_writes  (phase 2 sent to one server, not to the others),
# and is SIGKILLed there. The recovery module must release the orphan locks
# and recompute the stripes' parity within t_HB + 2*t_T + lock_lease_ms
# (measured and printed; asserted within 2x that bound: correctness, not
# speed). Afterwards every byte is the old one or the dead writer's, the
# rest of the file and the other files are unchanged, and scrub is clean.
source "$(dirname "$0")/lib.sh"
use_test_build # DEPFS_TEST_NO_LOCKS / DEPFS_TEST_PAUSE exist only there
require_recovery
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
PAUSE_WAIT_S=30
SLACK_FACTOR=2

cluster_up --servers 8
mkdir "$MNT/L8_6" "$REF/L8_6"
setfattr -n user.depfs.layout -v 8@6 "$MNT/L8_6"
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6 --files 3 --seed 9 || fail "populate failed"
head -c 3000000 /dev/urandom >"$REF/L8_6/target"
cp "$REF/L8_6/target" "$MNT/L8_6/target"
verify_all "$REF"
BOUND_MS=$(( $(detect_bound_ms) + $(conf_ms lock_lease_ms 5000) ))
log "bound t_HB + 2*t_T + lock_lease_ms = ${BOUND_MS} ms (asserting <= ${SLACK_FACTOR}x)"

# kill_paused POINT OFFSET BYTES
kill_paused() {
  local point=$1 off=$2 len=$3 err="$DEPFS_STATE/pause-$1.err" pid t_pause t_kill held took
  log "writer of $len bytes at $off in /L8_6/target, DEPFS_TEST_PAUSE=$point"
  DEPFS_TEST_PAUSE=$point python3 "$FAULTLOAD" pause-writer --lib "$LIBDEPFS_SO" --conf "$CONF" \
    --path /L8_6/target --offset "$off" --bytes "$len" --ready "$DEPFS_STATE/w-$point" --seed 3 >"$err" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + PAUSE_WAIT_S))
  until grep -q "DEPFS_TEST_PAUSE reached: $point" "$err" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      local rc=0; wait "$pid" || rc=$?; cat "$err"
      fail "the writer exited (rc $rc) without reaching DEPFS_TEST_PAUSE point '$point'"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { kill -9 "$pid"; cat "$err"; fail "no 'DEPFS_TEST_PAUSE reached: $point' within ${PAUSE_WAIT_S}s"; }
    sleep 0.05
  done
  t_pause=$(now_ms)
  grep "DEPFS_TEST_PAUSE reached" "$err"
  held=$(locks_held)
  log "paused at $point; stripe locks held cluster-wide: $held"
  [[ "$held" =~ ^[0-9]+$ ]] && [ "$held" -gt 0 ] || { kill -9 "$pid"; fail "no stripe locks held at pause point $point (locks_held=$held)"; }
  t_kill=$(now_ms)
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  log "SIGKILLed the writer (pid $pid)"
  while :; do
    held=$(locks_held)
    [ "$held" = 0 ] && break
    took=$(( $(now_ms) - t_kill ))
    [ "$took" -le $(( SLACK_FACTOR * BOUND_MS )) ] ||
      fail "$point: orphan locks still held ($held) ${took} ms after the kill (bound ${BOUND_MS} ms, x${SLACK_FACTOR})"
    sleep 0.1
  done
  took=$(( $(now_ms) - t_kill ))
  log "RESULT $point: orphan locks released ${took} ms after SIGKILL ($(( $(now_ms) - t_pause )) ms after the pause began; bound t_HB + 2*t_T + lease = ${BOUND_MS} ms)"
  grep -h -i -E "orphan|repair" "$DEPFS_STATE"/logs/recovery.log | tail -3 || true
  depfs scrub /L8_6/target || fail "$point: parity of /L8_6/target not repaired after the orphan locks were released"
  python3 "$FAULTLOAD" after-failed-write "$MNT" "$REF" --path /L8_6/target --ready "$DEPFS_STATE/w-$point" ||
    fail "$point: /L8_6/target holds bytes neither old nor the dead writer's"
}

# both writes span two data units of stripe 0 (64 KiB units), unaligned
kill_paused after_lock 100000 70001
kill_paused between_writes 40000 200003
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: orphan locks of a SIGKILLed writer (after_lock, between_writes) released and parity repaired within the bound; data intact; scrub clean"
