#!/usr/bin/env bash
# test_degraded_read_race - decoding reads racing a writer never see a torn
# stripe (issue 4), on an 8@6 file with 2 of 8 I/O servers down (every
# stripe decodes), through both read paths of a degraded stripe:
#   - libdepfs reads of random ranges (degraded_race.py lib), whose
#     partial stripes go through the client's degraded stripe cache and
#     whose whole stripes decode straight to the caller;
#   - reads through the FUSE mount (the kernel asks 128 KiB at a time: the
#     requests of one stripe share one cached whole-stripe decode);
# while a separate libdepfs client rewrites the region over and over, each
# 8-byte word = generation << 32 | index. Every word read must be one a
# write put there; a decode mixing units from before and after a write
# yields neither.
# Negative proof: the same race with a reader whose decoding reads take no
# stripe locks (DEPFS_TEST_NO_LOCKS=1, TEST ONLY) must be caught reading
# wrong words (bounded number of tries), so the check can see a torn decode.
# Then the servers return with --rebuild and scrub is clean.
source "$(dirname "$0")/lib.sh"
use_test_build # DEPFS_TEST_NO_LOCKS / DEPFS_TEST_PAUSE exist only there
require_recovery
REGION=$((8 * 393216))    # 8 stripes of an 8@6 file with 64 KiB units
RACE_S=8
NEG_TRIES=8
NEG_S=6
READ_MAX=$((1 << 20))       # random ranges up to 1 MiB (partial and whole stripes)
NEG_READ_MAX=$((128 << 10)) # small reads: many tries per second
DRACE="$TOP/tests/integration/degraded_race.py"

cluster_up --servers 8
mkdir -p "$MNT/d"
setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
RACE="$DEPFS_STATE/race"

# start_writer SECONDS: the libdepfs writer in the background (pid in $rw)
start_writer() {
  rm -f "$RACE" "$RACE.gen"
  python3 "$FAULTLOAD" race-writer --lib "$LIBDEPFS_SO" --conf "$CONF" --path /d/race \
    --bytes "$REGION" --seconds "$1" --ready "$RACE" >"$DEPFS_STATE/rw.out" 2>&1 &
  rw=$!
  for _ in $(seq 100); do [ -e "$RACE" ] && break; kill -0 $rw 2>/dev/null || break; sleep 0.1; done
  [ -e "$RACE" ] || { cat "$DEPFS_STATE/rw.out"; fail "race writer did not start"; }
}

# reader MODE SECONDS MAX_BYTES SEED [env...]: degraded_race.py through
# libdepfs (lib) or the mount (mount), every word checked
reader() {
  local mode=$1 secs=$2 max=$3 seed=$4
  local where=(--lib "$LIBDEPFS_SO" --conf "$CONF" --path /d/race)
  [ "$mode" = mount ] && where=(--file "$MNT/d/race")
  python3 "$DRACE" "$mode" "${where[@]}" --bytes "$REGION" --seconds "$secs" \
    --ready "$RACE" --max-bytes "$max" --seed "$seed"
}

log "populating /d/race, then killing 2 of the 8 servers"
start_writer 1
wait $rw || { cat "$DEPFS_STATE/rw.out"; fail "race writer failed"; }
V1=2; V2=5
kill_down "$V1"
kill_down "$V2"

log "decoding reads (libdepfs and the mount) racing a writer, ${RACE_S}s"
start_writer "$RACE_S"
reader lib $((RACE_S - 1)) "$READ_MAX" 7 >"$DEPFS_STATE/rr.out" 2>&1 &
rr=$!
reader mount $((RACE_S - 1)) "$READ_MAX" 8 || { kill $rw $rr 2>/dev/null; fail "the mount read a torn stripe"; }
wait $rr || { cat "$DEPFS_STATE/rr.out"; kill $rw 2>/dev/null; fail "a libdepfs reader read a torn stripe"; }
cat "$DEPFS_STATE/rr.out"
wait $rw || { cat "$DEPFS_STATE/rw.out"; fail "race writer failed with 2 servers down"; }
cat "$DEPFS_STATE/rw.out"

log "negative proof: the same race with lock-free decoding reads must be caught"
caught=
for try in $(seq "$NEG_TRIES"); do
  start_writer "$NEG_S"
  if DEPFS_TEST_NO_LOCKS=1 reader lib $((NEG_S - 1)) "$NEG_READ_MAX" "$try" >"$DEPFS_STATE/neg.out" 2>&1; then
    log "try $try: $(tail -1 "$DEPFS_STATE/neg.out")"
  elif grep -q "WRONG BYTES" "$DEPFS_STATE/neg.out"; then
    caught=$try
  else
    cat "$DEPFS_STATE/neg.out"; fail "lock-free reader failed otherwise"
  fi
  wait $rw || { cat "$DEPFS_STATE/rw.out"; fail "race writer failed"; }
  [ -z "$caught" ] || break
done
[ -n "$caught" ] || fail "lock-free decoding reads were never caught in $NEG_TRIES tries: the check cannot see torn decodes"
log "caught on try $caught: $(grep -m1 'WRONG BYTES' "$DEPFS_STATE/neg.out")"

log "restart $V1 and $V2 with --rebuild"
"$LC" restart "$V1" --rebuild
"$LC" restart "$V2" --rebuild
wait_all_up 180
settle_clients
scrub_clean
echo "PASS: decoding reads with 2 of 8 down (libdepfs and the mount) never saw a torn stripe while a writer raced; lock-free reads caught on try $caught; scrub clean"
