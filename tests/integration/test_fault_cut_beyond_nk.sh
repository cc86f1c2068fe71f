#!/usr/bin/env bash
# test_fault_cut_beyond_nk - a change that more than n-k of a file's
# servers miss must not record them dirty: recorded, they are more stale
# units than n-k, each one's rejoin needs k others up, and they stay
# rebuilding (and every file on them unreadable) for good. A write that
# loses them while it writes leaves its stripes in doubt under their locks
# instead; a truncate that finds them down cuts nothing. A local run of
# test_fault_interrupted_write ended so: an orphan lock's repair found every
# server up, then three of an 8@6 file were "behind the cluster epoch" for
# its write, and it recorded all three dirty.
#
# One 8@6 file of fsynced random bytes, three parts:
#   truncate  three servers of the file SIGKILLed and known down: a
#           truncate to two stripes must fail and cut nothing (it cut the
#           other five and recorded the three dirty); restarted, they
#           rejoin and the file is as it was;
#   write   a libdepfs writer of an unaligned overwrite of stripe 1 pauses
#           with its stripe locks taken (DEPFS_TEST_PAUSE=after_lock, for
#           PAUSE_MS, then it goes on); meanwhile the servers of data unit 4
#           and of both parity units of the stripe are SIGSTOPped, so its
#           write to them times out: it must fail, and they stay stopped
#           until it has;
#   repair  depfs-recovery runs with DEPFS_TEST_PAUSE=orphan_write; a
#           writer is SIGKILLed between the phase-2 writes of an overwrite
#           of stripe 2 (an orphan lock, data units 2..4 and both parity
#           units in doubt); when the orphan's repair stops before writing
#           them, the same three positions' servers of stripe 2 are
#           SIGSTOPped until the repair has given its answer.
# After each, within UP_BOUND_S every server is up again and within
# FREE_BOUND_S no stripe lock is held; the file reads back with every
# acknowledged byte right (the cut write's bytes old or new), the same when
# decoded with two of the stopped servers killed; scrub clean at the end.
source "$(dirname "$0")/lib.sh"
use_test_build # DEPFS_TEST_PAUSE exists only there
require_recovery
N=8; K=6; SU=65536
PAUSE_MS=4000     # the paused client's pause: the test stops servers in it
ANSWER_BOUND_S=90 # the cut client's answer after its pause
UP_BOUND_S=120
FREE_BOUND_S=60
TORN="$TOP/tests/integration/tornload.py"
WORK="$DEPFS_STATE/work"
RLOG="$DEPFS_STATE/logs/recovery.log"

cluster_up --servers "$N"
mkdir -p "$WORK"
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c $((4 * K * SU)) /dev/urandom >"$WORK/ref"
dd if="$WORK/ref" of="$MNT/d/f" bs=1M conv=fsync status=none
read -r -a SV <<<"$(file_servers /d/f)"
log "/d/f: 8@6 on servers ${SV[*]}"

# cut_of STRIPE: CUT = the servers of data unit 4 and of the parity units
# (units rotate: unit u of stripe s is at position (u + s) mod n)
cut_of() { CUT=("${SV[$(( (4 + $1) % N ))]}" "${SV[$(( (6 + $1) % N ))]}" "${SV[$(( (7 + $1) % N ))]}"); }
cut_signal() { # SIG: to every server of CUT
  local s pids=()
  for s in "${CUT[@]}"; do pids+=("$(cat "$DEPFS_STATE/pids/ioserver-$s.pid")"); done
  kill "-$1" "${pids[@]}"
}
# start_writer STRIPE PAUSE: a libdepfs overwrite of [3 SU - 1000, 4 SU +
# 3465) of STRIPE (data units 2, 3, 4) stopping at DEPFS_TEST_PAUSE=PAUSE;
# WRITER = its pid once it is there
start_writer() {
  local off=$(($1 * K * SU + 3 * SU - 1000))
  rm -f "$WORK/pending"
  DEPFS_TEST_PAUSE=$2 DEPFS_TEST_PAUSE_MS=$PAUSE_MS python3 "$FAULTLOAD" pause-writer \
    --lib "$LIBDEPFS_SO" --conf "$CONF" --path /d/f --offset "$off" --bytes 70001 \
    --ready "$WORK/pending" --seed "$1" >"$WORK/writer.err" 2>&1 &
  WRITER=$!
  wait_paused "$WORK/writer.err" "$2" "$WRITER" ||
    { cat "$WORK/writer.err"; fail "the libdepfs writer never reached DEPFS_TEST_PAUSE=$2"; }
}
# after_cut WHAT: every server up, no lock held, the file right (also
# decoded around two of CUT), what it read adopted as acknowledged
after_cut() {
  wait_all_up "$UP_BOUND_S"
  wait_locks_freed "$(now_ms)" "$FREE_BOUND_S" "$1: the cut stripes' locks"
  log "$1: every server up, no stripe lock held; positions recorded dirty so far: $(grep -c 'recorded dirty' "$RLOG" || true)"
  rm -f "$WORK/out" "$WORK/out.deg"
  depfs cp depfs:/d/f "$WORK/out" >/dev/null || fail "$1: depfs cp of /d/f failed with every server up"
  python3 "$TORN" check "$WORK/out" "$WORK/ref" --pending "$WORK/pending" --what "$1: every server up" ||
    fail "$1: the file read back wrong with every server up"
  kill_down "${CUT[1]}"; kill_down "${CUT[2]}"
  depfs cp depfs:/d/f "$WORK/out.deg" >/dev/null || fail "$1: depfs cp of /d/f failed with ${CUT[1]} ${CUT[2]} down"
  cmp -s "$WORK/out" "$WORK/out.deg" ||
    fail "$1: decoded around servers ${CUT[1]} ${CUT[2]} the file reads other bytes than with every server up"
  restart_rejoined "${CUT[1]}" 60
  restart_rejoined "${CUT[2]}" 60
  python3 "$TORN" check "$WORK/out" "$WORK/ref" --pending "$WORK/pending" --what "$1" --adopt >/dev/null
}

# ---- truncate: with 3 servers down
cut_of 0
for s in "${CUT[@]}"; do kill_down "$s"; done
log "[truncate] servers ${CUT[*]} SIGKILLed and down"
if truncate -s $((2 * K * SU)) "$MNT/d/f" 2>"$WORK/truncate.err"; then
  fail "[truncate] a truncate with 3 of 8@6's servers down succeeded"
fi
log "[truncate] refused: $(cat "$WORK/truncate.err")"
for s in "${CUT[@]}"; do restart_rejoined "$s" "$UP_BOUND_S"; done
settle_clients
cmp -s "$WORK/ref" "$MNT/d/f" || fail "[truncate] the file changed though its truncate failed"
log "[truncate] every server rejoined; the file is as it was"

# ---- write: the writer's own phase-2 write loses 3 servers
cut_of 1
start_writer 1 after_lock
cut_signal STOP
log "[write] the writer holds its stripe locks of stripe 1: servers ${CUT[*]} SIGSTOPped"
deadline=$((SECONDS + PAUSE_MS / 1000 + ANSWER_BOUND_S))
while kill -0 "$WRITER" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
if kill -0 "$WRITER" 2>/dev/null; then
  cut_signal CONT
  fail "[write] the writer gave no answer within ${ANSWER_BOUND_S} s of its pause"
fi
wait "$WRITER" && wrc=0 || wrc=$?
cut_signal CONT
log "[write] the writer's answer (exit $wrc): $(tail -1 "$WORK/writer.err")"
[ "$wrc" -ne 0 ] || fail "[write] the write succeeded with 3 of its 8@6 servers stopped"
after_cut "[write]"
settle_clients

# ---- repair: an orphan's repair loses 3 servers as it writes
"$LC" kill recovery >/dev/null
seen=$(wc -l <"$RLOG") # the answers of this part come after
DEPFS_TEST_PAUSE=orphan_write DEPFS_TEST_PAUSE_MS=$PAUSE_MS "$LC" restart recovery >/dev/null
log "[repair] depfs-recovery restarted with DEPFS_TEST_PAUSE=orphan_write (${PAUSE_MS} ms)"
cut_of 2
start_writer 2 between_writes
kill -9 "$WRITER"; wait "$WRITER" 2>/dev/null || true
log "[repair] a writer SIGKILLed between its phase-2 writes of stripe 2: an orphan lock"
wait_paused "$RLOG" orphan_write ||
  fail "[repair] the orphan's repair never reached orphan_write: $(grep -h orphan "$RLOG" | tail -3)"
cut_signal STOP
log "[repair] the repair stopped before its writes: servers ${CUT[*]} SIGSTOPped"
deadline=$((SECONDS + PAUSE_MS / 1000 + ANSWER_BOUND_S))
answer=""
while [ -z "$answer" ] && [ "$SECONDS" -lt "$deadline" ]; do
  answer=$(tail -n +"$((seen + 1))" "$RLOG" | grep -m1 -E "orphan lock of client .* (repaired in|repair failed)" || true)
  sleep 0.2
done
cut_signal CONT
[ -n "$answer" ] || fail "[repair] the orphan's repair gave no answer within ${ANSWER_BOUND_S} s of its pause"
log "[repair] the repair's answer: ${answer#* depfs-recovery\[*\] }"
after_cut "[repair]"

settle_clients
scrub_clean
echo "PASS: a truncate with 3 of 8@6's servers down cut nothing; a write and an orphan repair that each lost 3 while writing left their stripes in doubt for repair: every server up, no lock held, acknowledged bytes right, also decoded from parity, scrub clean"
