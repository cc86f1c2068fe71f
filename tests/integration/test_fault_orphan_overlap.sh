#!/usr/bin/env bash
# test_fault_orphan_overlap - two orphan stripe locks of different owners on
# overlapping stripes of one file, held on two different servers of its
# layout (issue 10: each repair needs the stripes the other orphan holds, so
# neither could ever finish). On an 8@6 file holding data, raw IO_LOCKs
# (rawlock.py, badwire.py's frames) take
#   owner client A op 1, stripes [0,10), on the layout's first server,
#   owner client B op 2, stripes [5,15), on its second server,
# and nobody ever unlocks them. Expect, within FREE_BOUND_S of the locks
# (lock_lease_ms + a few heartbeats + the repair): no lock held on any
# server (depfs status --json), no "repair failed" in depfs-recovery's log;
# then a root `dd bs=64k count=20 conv=fsync,notrunc` over the locked
# stripes succeeds, the file reads back as written (mount and depfs cp, and
# with two servers of the layout stopped, so parity is checked too), and
# scrub --all is clean. The dd runs (bounded by DD_WAIT_S) even when the
# locks were not freed, so a failure shows what a user would see. Last, a
# raw lock in depfs-recovery's own client id, which none of its jobs holds,
# is freed within the same bound.
source "$(dirname "$0")/lib.sh"
require_recovery
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF/L8_6"
FREE_BOUND_S=30
DD_WAIT_S=90
OWNER_A=1000001
OWNER_B=1000002
SELF_OP=77777
REBUILD_WAIT_S=120

cluster_up --servers 8
mkdir "$MNT/L8_6"
setfattr -n user.depfs.layout -v 8@6 "$MNT/L8_6"
# 16 stripes of 6 x 64 KiB: the locked stripes 0..14 all hold data
head -c $((16 * 6 * 65536)) /dev/urandom >"$REF/L8_6/target"
cp "$REF/L8_6/target" "$MNT/L8_6/target"
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6 --files 2 --seed 5 >/dev/null || fail "populate failed"
verify_all "$REF"

read -r INO SRV_A SRV_B < <(depfs layout get --json /L8_6/target | json_get ino servers.0 servers.1)
addr_of() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $4}' "$CONF"; }
log "/L8_6/target: inode $INO, layout servers $(file_servers /L8_6/target)"
LEASE_MS=$(conf_ms lock_lease_ms 5000)
t_lock=$(now_ms)
python3 "$TOP/tests/integration/rawlock.py" "$(addr_of "$SRV_A")" "$INO" 0 10 "$OWNER_A" 1 ||
  fail "server $SRV_A did not grant the raw IO_LOCK of owner A"
python3 "$TOP/tests/integration/rawlock.py" "$(addr_of "$SRV_B")" "$INO" 5 10 "$OWNER_B" 2 ||
  fail "server $SRV_B did not grant the raw IO_LOCK of owner B"
held=$(locks_held)
log "stripe locks held cluster-wide: $held (lock_lease_ms = $LEASE_MS ms)"
[ "$held" = 2 ] || fail "expected the 2 raw locks to be held, status says $held"

freed=0
while :; do
  held=$(locks_held)
  took=$(( $(now_ms) - t_lock ))
  [ "$held" = 0 ] && { freed=1; break; }
  [ "$took" -lt $((FREE_BOUND_S * 1000)) ] || break
  sleep 0.5
done
grep -h -E "orphan" "$DEPFS_STATE/logs/recovery.log" | tail -6 || true
if [ "$freed" -eq 1 ]; then
  log "RESULT both orphan locks released ${took} ms after they were taken (lease ${LEASE_MS} ms, bound ${FREE_BOUND_S} s)"
else
  log "orphan locks still held ($held) ${took} ms after they were taken (bound ${FREE_BOUND_S} s)"
fi

# the user's view: an overwrite of the locked stripes
head -c $((20 * 65536)) /dev/urandom >"$DEPFS_STATE/dd.in"
t0=$(now_ms)
dd_rc=0
timeout "$DD_WAIT_S" dd if="$DEPFS_STATE/dd.in" of="$MNT/L8_6/target" bs=64k count=20 conv=fsync,notrunc \
  2>"$DEPFS_STATE/dd.err" || dd_rc=$?
dd_ms=$(( $(now_ms) - t0 ))
if [ "$dd_rc" -ne 0 ]; then
  cat "$DEPFS_STATE/dd.err"
  grep -h -E "orphan" "$DEPFS_STATE/logs/recovery.log" | tail -4 || true
fi
[ "$freed" -eq 1 ] || fail "two overlapping orphan locks (owners $OWNER_A on server $SRV_A, $OWNER_B on server $SRV_B) still held ($held) ${FREE_BOUND_S} s after they were taken; dd over their stripes: rc $dd_rc after ${dd_ms} ms"
[ "$dd_rc" -eq 0 ] || fail "dd conv=fsync over the formerly locked stripes failed (rc $dd_rc) after ${dd_ms} ms"
log "dd of 20 x 64 KiB with conv=fsync took ${dd_ms} ms"
! grep -q "repair failed" "$DEPFS_STATE/logs/recovery.log" ||
  fail "depfs-recovery logged a failed repair: $(grep -m1 'repair failed' "$DEPFS_STATE/logs/recovery.log")"
dd if="$DEPFS_STATE/dd.in" of="$REF/L8_6/target" bs=64k count=20 conv=notrunc status=none
verify_all "$REF"
depfs cp depfs:/L8_6/target "$DEPFS_STATE/out" >/dev/null
cmp "$DEPFS_STATE/out" "$REF/L8_6/target" || fail "depfs cp of /L8_6/target differs from what was written"

# parity checked against the data it protects: two of the file's servers down
read -r D1 D2 < <(depfs layout get --json /L8_6/target | json_get servers.2 servers.5)
log "kill servers $D1 and $D2: reads of /L8_6/target decode from parity"
kill_down "$D1"; kill_down "$D2"
settle_clients
verify_all "$REF"
"$LC" restart "$D1" --rebuild >/dev/null; "$LC" restart "$D2" --rebuild >/dev/null
wait_all_up "$REBUILD_WAIT_S"
settle_clients
verify_all "$REF"
[ "$(locks_held)" = 0 ] || fail "stripe locks held at the end: $(locks_held)"

# A lock in depfs-recovery's own name that none of its jobs holds (seed 80
# of the campaign: an intent whose store failed on a full disk came back
# with its server's restart) is an orphan like anyone's: freed within the
# same bound, not only after REC_SELF_ORPHAN_AGE_MS (60 s).
SELF=$(sed -n 's/.*recovery client \([0-9]*\) mounted.*/\1/p' "$DEPFS_STATE/logs/recovery.log" | tail -1)
[ -n "$SELF" ] || fail "depfs-recovery's client id not found in its log"
t_lock=$(now_ms)
python3 "$TOP/tests/integration/rawlock.py" "$(addr_of "$SRV_A")" "$INO" 2 4 "$SELF" "$SELF_OP" ||
  fail "server $SRV_A did not grant the raw IO_LOCK in depfs-recovery's name"
self_freed=0
while :; do
  took=$(( $(now_ms) - t_lock ))
  [ "$(locks_held)" = 0 ] && { self_freed=1; break; }
  [ "$took" -lt $((FREE_BOUND_S * 1000)) ] || break
  sleep 0.5
done
[ "$self_freed" -eq 1 ] || fail "a lock in depfs-recovery's own name (client $SELF op $SELF_OP) with no job of its running was still held ${took} ms after it was taken (bound ${FREE_BOUND_S} s)"
log "RESULT the lock in depfs-recovery's own name (client $SELF) released ${took} ms after it was taken"
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: two overlapping orphan locks of different owners on two servers released, and one in depfs-recovery's own name (bound ${FREE_BOUND_S} s); dd conv=fsync over them in ${dd_ms} ms; data right, also decoded; scrub clean"
