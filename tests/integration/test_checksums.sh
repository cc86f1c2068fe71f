#!/usr/bin/env bash
# test_checksums - damage on an I/O server's disk is found by the block
# checksums and read around, never returned (issue 12). For layouts 8@6,
# 8@7, 4@2 and 8@4, on a file of 5 stripes:
#   - bytes flipped in n-k units of stripe 2 (data and parity units, in
#     the strip files on disk, behind the servers' backs): a fresh client
#     reads the original bytes, and `depfs status` counts the damaged blocks;
#   - n-k+1 damaged units of one stripe: the read fails (EIO), it does not
#     return wrong bytes;
#   - a small overwrite whose pre-read meets a damaged data and parity
#     unit is written (they are rebuilt first), not failed;
#   - a strip file deleted (and its server restarted, so no cached
#     descriptor hides it) or cut short by hand: the file reads back exact.
# Before checksums, the first case returned the flipped bytes. The read
# that meets damage rebuilds it in place (a second read meets none, scrub
# is clean), also the lost and the cut strip file; the n-k+1 case is
# brought back to n-k by hand and scrub --repair rebuilds the rest.
source "$(dirname "$0")/lib.sh"
# the damage planted here is for reads and `depfs scrub` to meet first:
# no background scrub (test_background_scrub covers that one)
export DEPFS_CONF_EXTRA="scrub_rate = 0"
cluster_up --servers 8
REF="$DEPFS_STATE/ref"
mkdir -p "$REF"

damaged_total() { status_json | json_get totals.damaged_blocks 2>/dev/null || echo 0; }

read_back() { # DEPFS-PATH REF -> 0 when a fresh client reads REF's bytes
  depfs cp "depfs:$1" "$DEPFS_STATE/back" 2> "$DEPFS_STATE/back.err" && cmp -s "$2" "$DEPFS_STATE/back"
}

for L in 8@6 8@7 4@2 8@4; do
  n=${L%@*}; k=${L#*@}; m=$((n - k))
  d="/L${n}_$k"
  mkdir "$MNT$d"; setfattr -n user.depfs.layout -v "$L" "$MNT$d"
  sb=$((k * 65536))
  head -c $((5 * sb)) /dev/urandom > "$REF/$L"
  depfs cp "$REF/$L" "depfs:$d/f" || fail "$L: copy in failed"
  # damage units 0..m-1 of stripe 2 at once (for n-k >= 2 the last is a
  # parity unit: k+m-1); a read returns the written bytes, counts them, and
  # rebuilds them in place: a second read meets no damage, scrub is clean
  before=$(damaged_total)
  for j in $(seq 0 $((m - 1))); do
    u=$j; [ "$j" -eq $((m - 1)) ] && [ "$m" -ge 2 ] && u=$((n - 1))
    read -r sid strip off < <(strip_of "$d/f" 2 "$u")
    flip_byte "$strip" $((off + 1000 + 97 * j))
  done
  read_back "$d/f" "$REF/$L" ||
    fail "$L: with $m damaged units the read did not return the written bytes: $(cat "$DEPFS_STATE/back.err")"
  after=$(damaged_total)
  [ "$after" -gt "$before" ] || fail "$L: depfs status counted no damaged block ($before -> $after)"
  grep -q "rebuilt in place" "$DEPFS_STATE/back.err" ||
    { cat "$DEPFS_STATE/back.err"; fail "$L: the read did not rebuild the damaged units it met"; }
  read_back "$d/f" "$REF/$L" || fail "$L: the second read is not exact"
  [ "$(damaged_total)" = "$after" ] || fail "$L: the second read met damage again ($after -> $(damaged_total))"
  depfs scrub "$d/f" >/dev/null 2>&1 || fail "$L: scrub after the healing read is not clean: $(depfs scrub "$d/f" 2>&1 | tail -2)"
  log "$L: $m damaged units of stripe 2: read back exact (damaged blocks seen $before -> $after), rebuilt by the read, second read and scrub clean"
  # one more than the code can tell (stripe 3): the read must fail, not lie
  flips=()
  for u in $(seq 0 "$m"); do
    read -r sid strip off < <(strip_of "$d/f" 3 "$u")
    flip_byte "$strip" $((off + 4321))
    flips+=("$strip $((off + 4321))")
  done
  if depfs cp "depfs:$d/f" "$DEPFS_STATE/back" 2> "$DEPFS_STATE/back.err"; then
    cmp -s "$REF/$L" "$DEPFS_STATE/back" && fail "$L: read exact with $((m + 1)) damaged units: the damage was not where it was meant to be"
    fail "$L: $((m + 1)) damaged units of a stripe: the read returned WRONG bytes instead of failing"
  fi
  log "$L: $((m + 1)) damaged units: the read fails ($(tail -1 "$DEPFS_STATE/back.err"))"
  flip_byte ${flips[0]} # back to n-k: undone by hand; the rest is scrub's
  depfs scrub --repair "$d/f" > "$DEPFS_STATE/repair.out" 2>&1 ||
    { cat "$DEPFS_STATE/repair.out"; fail "$L: scrub --repair left damage"; }
  grep -q "$m checksum" "$DEPFS_STATE/repair.out" ||
    { cat "$DEPFS_STATE/repair.out"; fail "$L: scrub did not name the $m damaged units by checksum"; }
  read_back "$d/f" "$REF/$L" || fail "$L: not exact after the repair"
  log "$L: scrub --repair rebuilt the other $m damaged units of stripe 3"
done

# ---- a partial-stripe overwrite whose pre-read meets a damaged unit: the
# write reads around it (it is rebuilt first), it does not fail
pwrite_sync() { # MOUNT-PATH OFFSET REF-FILE LEN: bytes of REF at OFFSET, fsync
  python3 - "$@" <<'PY'
import os, sys
path, off, ref, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open(ref, "rb") as r:
    r.seek(off); data = r.read(n)
fd = os.open(path, os.O_WRONLY)
os.pwrite(fd, data, off); os.fsync(fd); os.close(fd)
PY
}
for L in 8@6 4@2; do
  n=${L%@*}; k=${L#*@}
  f="/L${n}_$k/f"; sb=$((k * 65536))
  head -c $((5 * sb)) /dev/urandom > "$DEPFS_STATE/new"
  cp "$REF/$L" "$DEPFS_STATE/want"
  for u in 0 "$k"; do # the data unit written (its old bytes), a parity unit
    read -r sid strip off < <(strip_of "$f" 4 "$u")
    flip_byte "$strip" $((off + 1010))
  done
  woff=$((4 * sb + 1000)) # 100 bytes of data unit 0 of stripe 4
  dd if="$DEPFS_STATE/new" of="$DEPFS_STATE/want" bs=1 skip=$woff seek=$woff count=100 \
     conv=notrunc status=none
  pwrite_sync "$MNT$f" $woff "$DEPFS_STATE/want" 100 2> "$DEPFS_STATE/pw.err" ||
    fail "$L: a small overwrite whose pre-read met damaged units failed: $(tail -2 "$DEPFS_STATE/pw.err")"
  cp "$DEPFS_STATE/want" "$REF/$L"
  read_back "$f" "$REF/$L" || fail "$L: not exact after an overwrite over damaged units"
  depfs scrub "$f" >/dev/null 2>&1 ||
    fail "$L: scrub after an overwrite over damaged units is not clean: $(depfs scrub "$f" 2>&1 | tail -2)"
  log "$L: a 100-byte overwrite whose pre-read met a damaged data and parity unit: written, exact, scrub clean"
done

# ---- a strip file deleted by hand, and one cut short
read -r sid strip off < <(strip_of /L8_6/f 1 0)
cp "$strip" "$DEPFS_STATE/saved-strip"; rm "$strip"
restart_rejoined "$sid" 60 # no cached descriptor: the loss shows
read_back /L8_6/f "$REF/8@6" || fail "8@6: a deleted strip file on server $sid: not read back exact: $(cat "$DEPFS_STATE/back.err")"
grep -q "missing beside its checksums" "$DEPFS_STATE/logs/ioserver-$sid.log" ||
  fail "server $sid did not report its strip file missing"
log "8@6: strip file deleted on server $sid: read back exact (reported missing, not read as zeros)"
cmp "$strip" "$DEPFS_STATE/saved-strip" || fail "8@6: the read did not rebuild the lost strip file as it was"
depfs scrub /L8_6/f >/dev/null 2>&1 || fail "8@6: scrub not clean after the healing read"

read -r sid strip off < <(strip_of /L4_2/f 0 1)
cp "$strip" "$DEPFS_STATE/saved-strip"
truncate -s $((65536 + 5000)) "$strip"
read_back /L4_2/f "$REF/4@2" || fail "4@2: a strip file cut short on server $sid: not read back exact: $(cat "$DEPFS_STATE/back.err")"
log "4@2: strip file cut short on server $sid: read back exact"
cmp "$strip" "$DEPFS_STATE/saved-strip" || fail "4@2: the read did not rebuild the cut strip file as it was"

for L in 8@6 8@7 4@2 8@4; do
  n=${L%@*}; k=${L#*@}
  cmp "$REF/$L" "$MNT/L${n}_$k/f" || fail "$L: differs through the mount"
done
scrub_clean
echo "PASS: damaged units (n-k per stripe, data and parity), a deleted and a truncated strip file are read around and rebuilt by the read; n-k+1 damaged units fail the read; scrub --repair rebuilds; for 8@6 8@7 4@2 8@4"
