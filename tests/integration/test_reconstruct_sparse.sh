#!/usr/bin/env bash
# test_reconstruct_sparse - reconstruction keeps sparse files sparse. A file
# of the default 8@6 layout gets 1 MiB at offset 0 and 1 MiB at 1 GiB (a
# hole of ~1 GiB between); I/O server S (every server holds a strip of it)
# is SIGKILLed, its data directory wiped, and `local-cluster replace S`
# reconstructs it. Then S's strip file of that file is at least as long as
# before but has few allocated blocks (stat %b: about what the
# survivors allocate, far below its length), the file reads back
# unchanged (the hole as zeros) also with two other servers down (reads
# decode through S's units), and scrub is clean. (Reads stream through the
# mount with cmp: a 1 GiB file is too big for faultload's in-memory verify.)
source "$(dirname "$0")/lib.sh"
require_recovery
MIB=$((1024 * 1024))
HOLE_AT_MIB=1024                 # the second extent starts at 1 GiB
DATA_MIB=1                       # bytes written at each end
ALLOC_SLACK_BYTES=$((4 * MIB))   # S may allocate this much more than a survivor
REBUILD_WAIT_S=300
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"

strip_of() { echo "$(io_dir "$1")/strips/$(printf '%016x' "$2")"; }
alloc_bytes() { echo $(( $(stat -c %b "$1") * $(stat -c %B "$1") )); }

cluster_up --servers 8
head -c $((DATA_MIB * MIB)) /dev/urandom >"$REF/a"
head -c $((DATA_MIB * MIB + 4321)) /dev/urandom >"$REF/b"
for dst in "$REF/sparse" "$MNT/sparse"; do
  dd if="$REF/a" of="$dst" bs=$MIB conv=notrunc status=none
  dd if="$REF/b" of="$dst" bs=$MIB seek=$HOLE_AT_MIB conv=notrunc status=none
done
rm "$REF/a" "$REF/b"
sync "$MNT/sparse"
cmp "$REF/sparse" "$MNT/sparse" || fail "the sparse file reads back wrong before any failure"
ino=$(stat -c %i "$MNT/sparse")
servers=$(file_servers /sparse)
log "sparse file: inode $ino, $(stat -c %s "$MNT/sparse") bytes, servers $servers"

# the survivors' strips are sparse to begin with (what S must match)
max_alloc=0
for id in $servers; do
  f=$(strip_of "$id" "$ino"); [ -f "$f" ] || fail "server $id has no strip file $f"
  a=$(alloc_bytes "$f")
  [ "$a" -gt "$max_alloc" ] && max_alloc=$a
done
S=$(echo $servers | cut -d' ' -f$(( RANDOM % 8 + 1 )))
len_before=$(stat -c %s "$(strip_of "$S" "$ino")")
log "server $S's strip: $len_before bytes long, $(alloc_bytes "$(strip_of "$S" "$ino")") allocated; most any server allocates: $max_alloc"

log "replace server $S: SIGKILL, wipe, local-cluster replace (depfs reconstruct)"
kill_down "$S"
"$LC" replace "$S" || fail "local-cluster replace $S failed"
wait_all_up "$REBUILD_WAIT_S"

f=$(strip_of "$S" "$ino")
[ -f "$f" ] || fail "server $S has no strip file for the sparse file after its reconstruction"
len=$(stat -c %s "$f"); a=$(alloc_bytes "$f")
log "RESULT reconstructed strip of server $S: $len bytes long, $a bytes allocated (before the wipe: $len_before long)"
# (the rebuild cuts S's strip to the survivors' longest: a last unit past
# the data may make it one unit longer than it was)
[ "$len" -ge "$len_before" ] || fail "server $S's strip is $len bytes long, $len_before before the wipe"
[ "$a" -le $((max_alloc + ALLOC_SLACK_BYTES)) ] ||
  fail "server $S's reconstructed strip allocates $a bytes for $len: the hole was written out (a survivor allocates at most $max_alloc)"

settle_clients
cmp "$REF/sparse" "$MNT/sparse" || fail "the sparse file differs after the reconstruction"
o1=$(echo $servers | tr ' ' '\n' | grep -vx "$S" | head -1)
o2=$(echo $servers | tr ' ' '\n' | grep -vx "$S" | tail -1)
log "kill $o1 and $o2: reads decode through server $S's units"
kill_down "$o1"; kill_down "$o2"
cmp "$REF/sparse" "$MNT/sparse" || fail "the sparse file differs when read around servers $o1 and $o2"
"$LC" restart "$o1" --rebuild; "$LC" restart "$o2" --rebuild
wait_all_up "$REBUILD_WAIT_S"
scrub_clean
rm -rf "$REF"
echo "PASS: the reconstructed strip of server $S is $len bytes long with $a allocated (survivors at most $max_alloc); content unchanged, also decoded through it; scrub clean"
