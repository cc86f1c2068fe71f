#!/usr/bin/env bash
# test_fault_points - the named fault points of the test build (common/
# fault.h), armed through DEPFS_FAULTS, reach the failure paths nothing else
# exercises, and each ends in a consistent cluster:
#   strip_pwrite_eio  one I/O server's pwrite of a unit fails in the middle of
#                     a partial-stripe overwrite: the server demotes itself,
#                     the client writes around it (dirty records) as if it
#                     had failed, depfs-recovery rejoins it, and the file is
#                     exactly what was acknowledged, scrub clean;
#   xport_flip_bit    one bit of a frame the CLI sends flips on the wire: the
#                     server's CRC check refuses it, the client resends, the
#                     copy is byte-exact;
#   write_mem_flip    one bit of a write's bytes flips in an I/O server's
#                     memory after the frame check: the client's block CRCs
#                     catch it before it is stored; the server demotes
#                     itself, is written around and rejoins; copy exact;
#   kv_sync_eio       one synced write of an I/O server's state store fails:
#                     logged, the daemon keeps serving, the cluster converges;
#   strip_pwrite_enospc  a server fails to store a unit (a) under a writer
#                     that is slow to record it dirty: the server stays out
#                     of service while the writer holds its lock; (b) in
#                     an orphan repair's write: the repair writes around it
#                     and frees the stripes within a bound;
#   strip_pread_eio   an orphan repair's read fails: one source is read
#                     around; beyond n-k the repair fails and is retried
#                     soon (not only when its own lock is a minute old).
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
REPAIR_BOUND_S=60
# armed fault points count every hit: no background scrub reading beside
# the requests they are meant for
export DEPFS_CONF_EXTRA="scrub_rate = 0"
cluster_up --servers 8
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"

# ---- write_mem_flip on server 6: a bit of a write's bytes flips in the
# server's memory after the frame's CRC check; the client's block CRCs
# catch it where the server makes its checksums: refused, not stored. It
# comes before any file is written: the restart's rejoin has nothing to
# rebuild there, so the copy's write is the first the server stores.
log "server 6 restarted with DEPFS_FAULTS=write_mem_flip=1"
DEPFS_FAULTS=write_mem_flip=1 restart_rejoined 6 60 # the cluster calls it up again, not just itself
rejoined=$(rejoins_of 6)
head -c $((2 * 6 * 65536 + 5000)) /dev/urandom > "$DEPFS_STATE/memflip"
depfs cp "$DEPFS_STATE/memflip" depfs:/d/memflip >/dev/null 2>"$DEPFS_STATE/memflip.err" ||
  { cat "$DEPFS_STATE/memflip.err"; fail "cp failed: server 6's refused write must be written around"; }
grep -q "fault point write_mem_flip fires" "$DEPFS_STATE"/logs/ioserver-6.log ||
  fail "the fault point did not fire on server 6"
cmp "$DEPFS_STATE/memflip" "$MNT/d/memflip" || fail "a bit flipped in a server's memory reached the data"
grep -q "fail the CRC the client made of them" "$DEPFS_STATE"/logs/ioserver-6.log ||
  fail "server 6 did not refuse the bytes that changed in its memory"
wait_rejoined 6 "$rejoined" "$REPAIR_BOUND_S"
wait_all_up 60 || fail "servers not up: $(states_line)"
cmp "$DEPFS_STATE/memflip" "$MNT/d/memflip" || fail "the file changed in server 6's rejoin"

head -c $((4 * 6 * 65536)) /dev/urandom > "$DEPFS_STATE/ref"
cp "$DEPFS_STATE/ref" "$MNT/d/f" && sync "$MNT/d/f"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "copy differs"

# ---- strip_pwrite_eio on server 2 (every 8@6 stripe has a unit there)
log "server 2 restarted with DEPFS_FAULTS=strip_pwrite_eio=1"
DEPFS_FAULTS=strip_pwrite_eio=1 lc restart 2 >/dev/null
wait_all_up 60 || fail "servers not up after the restart: $(states_line)"
settle_clients # the mount's mark of the restarted server has expired: it writes to it again
rejoined=$(rejoins_of 2)
python3 - "$MNT/d/f" "$DEPFS_STATE/ref" <<'PY' || fail "the overwrite failed: server 2's failed pwrite must be written around"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
ref = bytearray(open(sys.argv[2], "rb").read())
for off in range(1000, len(ref) - 70000, 6 * 65536):
    os.pwrite(fd, b"\x5a" * 70000, off)
    ref[off:off + 70000] = b"\x5a" * 70000
os.fsync(fd)
os.close(fd)
open(sys.argv[2], "wb").write(ref)
PY
grep -q "fault point strip_pwrite_eio fires" "$DEPFS_STATE"/logs/ioserver-2.log ||
  fail "the fault point did not fire on server 2"
grep -q "failed to store a unit" "$DEPFS_STATE"/logs/ioserver-2.log ||
  fail "server 2 did not demote itself after failing to store a unit"
log "written around server 2, which demoted itself; waiting for its rejoin (bound ${REPAIR_BOUND_S}s)"
wait_rejoined 2 "$rejoined" "$REPAIR_BOUND_S"
wait_all_up 60 || fail "servers not up: $(states_line)"
[ "$(locks_held)" = 0 ] || fail "locks still held after the rejoin"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file differs from what was acknowledged"
depfs scrub --all >/dev/null || fail "scrub after server 2's rejoin: $(depfs scrub --all 2>&1 | tail -2)"

# ---- xport_flip_bit in the CLI's first frame with bulk
head -c $((3 * 1024 * 1024 + 77)) /dev/urandom > "$DEPFS_STATE/flip"
DEPFS_FAULTS=xport_flip_bit=1 depfs cp "$DEPFS_STATE/flip" depfs:/d/flip 2> "$DEPFS_STATE/flip.err" ||
  { cat "$DEPFS_STATE/flip.err"; fail "cp with one flipped bit on the wire failed"; }
grep -q "fault point xport_flip_bit fires" "$DEPFS_STATE/flip.err" || fail "the flip did not happen"
cmp "$DEPFS_STATE/flip" "$MNT/d/flip" || fail "a flipped bit reached the data"

# ---- kv_sync_eio on server 5: its next synced state write fails
log "server 5 restarted with DEPFS_FAULTS=kv_sync_eio=1"
DEPFS_FAULTS=kv_sync_eio=1 lc restart 5 >/dev/null
wait_all_up 90 || fail "servers not up after the restart: $(states_line)"
lc kill 3 >/dev/null # writes now record server 3 dirty on the others (synced writes)
wait_state 3 down 30 >/dev/null
head -c 200000 /dev/urandom > "$DEPFS_STATE/more"
cp "$DEPFS_STATE/more" "$MNT/d/more" && sync "$MNT/d/more" || : > "$DEPFS_STATE/more"
restart_rejoined 3 120
grep -q "injected EIO" "$DEPFS_STATE"/logs/ioserver-5.log || fail "kv_sync_eio did not fire on server 5"
kill -0 "$(cat "$DEPFS_STATE/pids/ioserver-5.pid")" || fail "server 5 died"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file changed"
[ ! -s "$DEPFS_STATE/more" ] || cmp "$DEPFS_STATE/more" "$MNT/d/more" || fail "a write acknowledged while server 3 was down is wrong"
scrub_clean

addr_of() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $4}' "$CONF"; }

# ---- strip_pwrite_enospc under a writer that is slow to record the server
# dirty (DEPFS_TEST_PAUSE=before_dirty): the server demotes itself and
# depfs-recovery tries to rejoin it at once, finding nothing to rebuild.
# It must stay out of service while the writer still holds its lock there
# (the writer's late records are refused for their stale plan; it keeps
# the lock until the orphan repair rewrites the unit): set UP meanwhile it
# would serve its stale unit (campaign seed 9 round 4, seed 14 round 1).
# A read after the write returns the new bytes; scrub ends clean.
X=6
log "server $X restarted with DEPFS_FAULTS=strip_pwrite_enospc=1; a writer pauses 4 s before recording it dirty"
DEPFS_FAULTS=strip_pwrite_enospc=1 lc restart $X >/dev/null
wait_all_up 60 || fail "servers not up after the restart: $(states_line)"
settle_clients
head -c $((4 * 6 * 65536)) /dev/urandom > "$DEPFS_STATE/slow"
DEPFS_TEST_PAUSE=before_dirty DEPFS_TEST_PAUSE_MS=4000 depfs cp "$DEPFS_STATE/slow" depfs:/d/f \
  2> "$DEPFS_STATE/slow.err" &
cp_pid=$!
wait_paused "$DEPFS_STATE/slow.err" before_dirty "$cp_pid" ||
  { kill "$cp_pid"; cat "$DEPFS_STATE/slow.err"; fail "the writer never reached the pause (server $X stored its unit?)"; }
up_seen=0
# within the writer's 4 s pause, by the clock (on a loaded machine a status
# call takes long, and a count of them ran past the pause into the rejoin
# that rightly follows the writer's release)
watch_end=$(( $(date +%s%N) / 1000000 + 2500 ))
for _ in $(seq 40); do
  [ $(( $(date +%s%N) / 1000000 )) -lt "$watch_end" ] || break
  [ "$(server_state $X)" = up ] && up_seen=1
  sleep 0.25
done
wait "$cp_pid" || { cat "$DEPFS_STATE/slow.err"; fail "the overwrite around server $X failed"; }
[ "$up_seen" = 0 ] || fail "server $X was set UP while the writer that saw its store fail still held its lock there"
grep -q "still locked by their writers" "$DEPFS_STATE/logs/ioserver-$X.log" ||
  fail "server $X did not refuse to be set UP (no rejoin tried during the pause?)"
depfs cp depfs:/d/f "$DEPFS_STATE/slow.back" || fail "reading back after the write failed"
cmp "$DEPFS_STATE/slow" "$DEPFS_STATE/slow.back" ||
  fail "a read after the write returned bytes that were not written"
cp "$DEPFS_STATE/slow" "$DEPFS_STATE/ref"
wait_all_up 90 || fail "server $X did not rejoin after the slow writer: $(states_line)"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file differs from what was acknowledged"
scrub_clean

# ---- strip_pwrite_enospc during an orphan repair: the repair's write of
# the unit in doubt fails on the server that held the orphan lock. The
# repair must write around it (record it dirty, release the stripes) rather
# than keep the stripes locked until a retry a minute later.
FREE_BOUND_S=25
read -r INO SRV < <(depfs layout get --json /d/f | json_get ino servers.2)
log "server $SRV restarted with DEPFS_FAULTS=strip_pwrite_enospc=1; an orphan lock on it"
DEPFS_FAULTS=strip_pwrite_enospc=1 lc restart "$SRV" >/dev/null
wait_all_up 60 || fail "servers not up after the restart: $(states_line)"
t_lock=$(now_ms)
python3 "$TOP/tests/integration/rawlock.py" "$(addr_of "$SRV")" "$INO" 0 3 1000001 1 ||
  fail "server $SRV did not grant the raw IO_LOCK"
wait_locks_freed "$t_lock" "$FREE_BOUND_S" "the orphan lock (the repair's write failed)"
log "orphan lock freed $FREED_MS ms after it was taken (bound ${FREE_BOUND_S} s)"
grep -q "fault point strip_pwrite_enospc fires" "$DEPFS_STATE/logs/ioserver-$SRV.log" ||
  fail "the fault point did not fire on server $SRV (the repair wrote nothing there?)"
wait_all_up 90 || fail "server $SRV did not rejoin after the repair: $(states_line)"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file differs from what was acknowledged"
scrub_clean
# ---- strip_pread_eio during an orphan repair's read. One source failing
# is read around (one more erasure: the repair succeeds at once). Sources
# failing beyond n-k make the repair fail, which leaves the stripe locked
# by depfs-recovery itself (no heartbeat reports that as another client's
# orphan); it must be retried after REC_REJOIN_RETRY_MS, not only once the
# lock is a minute old.
read -r INO HELD READ1 READ2 < <(depfs layout get --json /d/f | json_get ino servers.0 servers.1 servers.2)
# pread_case OWNER_CLIENT SERVER...: the servers restarted with one failing
# read each, an orphan lock of stripe 0 on server HELD, freed within the bound
pread_case() {
  local owner=$1 srv t_lock; shift
  log "servers $* restarted with DEPFS_FAULTS=strip_pread_eio=1; an orphan lock of stripe 0 on server $HELD"
  for srv in "$@"; do DEPFS_FAULTS=strip_pread_eio=1 lc restart "$srv" >/dev/null; done
  wait_all_up 60 || fail "servers not up after the restart: $(states_line)"
  t_lock=$(now_ms)
  python3 "$TOP/tests/integration/rawlock.py" "$(addr_of "$HELD")" "$INO" 0 1 "$owner" 1 ||
    fail "server $HELD did not grant the raw IO_LOCK"
  wait_locks_freed "$t_lock" "$FREE_BOUND_S" "the orphan lock (reads failing)"
  log "orphan lock freed $FREED_MS ms after it was taken (bound ${FREE_BOUND_S} s)"
  for srv in "$@"; do
    grep -q "fault point strip_pread_eio fires" "$DEPFS_STATE/logs/ioserver-$srv.log" ||
      fail "the fault point did not fire on server $srv (the repair read nothing there?)"
  done
  wait_all_up 60 || fail "servers did not rejoin: $(states_line)"
  cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file differs from what was acknowledged"
}
pread_case 1000002 "$READ1"
grep -q "could not give its units .*read around" "$DEPFS_STATE/logs/recovery.log" ||
  fail "the repair did not read around server $READ1's failed read"
grep -q "repair failed" "$DEPFS_STATE/logs/recovery.log" && fail "a repair failed on one unreadable source"
pread_case 1000003 "$READ1" "$READ2"
grep -q "repair failed" "$DEPFS_STATE/logs/recovery.log" ||
  fail "the repair did not fail with the held unit and two sources unreadable (n-k=2)"
scrub_clean
echo "PASS: fault points strip_pwrite_eio (written around the server, which demoted itself and rejoined), xport_flip_bit (resent, copy exact), write_mem_flip (refused by the client's block CRCs, written around, copy exact), kv_sync_eio (logged, server kept serving), strip_pwrite_enospc (no UP while the writer of a failed store holds its lock; a failed repair write is written around) and strip_pread_eio (one failing source read around; beyond n-k the failed repair is retried) end in a consistent cluster"
