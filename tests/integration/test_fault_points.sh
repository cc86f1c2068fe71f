#!/usr/bin/env bash
# test_fault_points - the named fault points of the test build (common/
# fault.h), armed through DEPFS_FAULTS, reach the failure paths nothing else
# exercises, and each ends in a consistent cluster:
#   strip_pwrite_eio  one I/O server's pwrite of a unit fails in the middle of
#                     a partial-stripe overwrite: the write fails, its stripe
#                     stays locked (in doubt) and depfs-recovery repairs it
#                     without scrub --repair; fsync-acknowledged bytes stay;
#   xport_flip_bit    one bit of a frame the CLI sends flips on the wire: the
#                     server's CRC check refuses it, the client resends, the
#                     copy is byte-exact;
#   kv_sync_eio       one synced write of an I/O server's state store fails:
#                     logged, the daemon keeps serving, the cluster converges.
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
REPAIR_BOUND_S=60
cluster_up --servers 8
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c $((4 * 6 * 65536)) /dev/urandom > "$DEPFS_STATE/ref"
cp "$DEPFS_STATE/ref" "$MNT/d/f" && sync "$MNT/d/f"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "copy differs"

# ---- strip_pwrite_eio on server 2 (every 8@6 stripe has a unit there)
log "server 2 restarted with DEPFS_FAULTS=strip_pwrite_eio=1"
DEPFS_FAULTS=strip_pwrite_eio=1 lc restart 2 >/dev/null
wait_all_up 60 || fail "servers not up after the restart: $(states_line)"
if python3 - "$MNT/d/f" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for off in range(1000, 4 * 6 * 65536 - 70000, 6 * 65536):
    os.pwrite(fd, b"\x5a" * 70000, off)
os.fsync(fd)
PY
then fail "the overwrite succeeded although server 2's pwrite failed"; fi
grep -q "fault point strip_pwrite_eio fires" "$DEPFS_STATE"/logs/ioserver-2.log ||
  fail "the fault point did not fire on server 2"
log "the write failed as it should; waiting for the repair (bound ${REPAIR_BOUND_S}s)"
deadline=$((SECONDS + REPAIR_BOUND_S))
until depfs scrub --all >/dev/null 2>&1 && [ "$(locks_held)" = 0 ]; do
  [ "$SECONDS" -lt "$deadline" ] || { depfs scrub --all; fail "stripes still inconsistent or locked after ${REPAIR_BOUND_S}s"; }
  sleep 1
done
log "consistent after $((SECONDS - deadline + REPAIR_BOUND_S)) s, no lock held"
python3 - "$DEPFS_STATE/ref" "$MNT/d/f" <<'PY' || fail "bytes outside the failed write changed"
import sys
ref = open(sys.argv[1], "rb").read(); got = open(sys.argv[2], "rb").read()
assert len(got) == len(ref), (len(got), len(ref))
for off in range(len(ref)):
    if got[off] != ref[off] and got[off] != 0x5a:
        sys.exit("byte %d is neither old nor new" % off)
    inside = any(o <= off < o + 70000 for o in range(1000, len(ref) - 70000, 6 * 65536))
    if not inside and got[off] != ref[off]:
        sys.exit("byte %d outside the failed write changed" % off)
PY
cp "$MNT/d/f" "$DEPFS_STATE/ref" # what is there now is the reference

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
rejoined=$(grep -c "ioserver 3: rejoined" "$DEPFS_STATE/logs/recovery.log" || true)
lc restart 3 >/dev/null
deadline=$((SECONDS + 120))
until [ "$(grep -c "ioserver 3: rejoined" "$DEPFS_STATE/logs/recovery.log" || true)" -gt "$rejoined" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "server 3 did not rejoin within 120 s: $(states_line)"
  sleep 0.5
done
wait_all_up 120 || fail "servers not up: $(states_line)"
grep -q "injected EIO" "$DEPFS_STATE"/logs/ioserver-5.log || fail "kv_sync_eio did not fire on server 5"
kill -0 "$(cat "$DEPFS_STATE/pids/ioserver-5.pid")" || fail "server 5 died"
cmp "$DEPFS_STATE/ref" "$MNT/d/f" || fail "the file changed"
[ ! -s "$DEPFS_STATE/more" ] || cmp "$DEPFS_STATE/more" "$MNT/d/more" || fail "a write acknowledged while server 3 was down is wrong"
scrub_clean
echo "PASS: fault points strip_pwrite_eio (write failed, stripe repaired without scrub --repair), xport_flip_bit (resent, copy exact) and kv_sync_eio (logged, server kept serving) end in a consistent cluster"
