#!/usr/bin/env bash
# test_checksums - damage on an I/O server's disk is found by the block
# checksums and read around, never returned (issue 12). For layouts 8@6,
# 8@7, 4@2 and 8@4, on a file of 5 stripes:
#   - bytes flipped in 1..n-k units of stripe 2 (data and parity units, in
#     the strip files on disk, behind the servers' backs): a fresh client
#     reads the original bytes, and `depfs status` counts the damaged blocks;
#   - n-k+1 damaged units of one stripe: the read fails (EIO), it does not
#     return wrong bytes;
#   - a strip file deleted (and its server restarted, so no cached
#     descriptor hides it) or cut short by hand: the file reads back exact.
# Before checksums, the first case returned the flipped bytes. Then scrub
# --repair rebuilds every damaged unit, the lost and the cut strip file
# (the n-k+1-th damaged unit is flipped back first: beyond the code), and
# the closing scrub is clean.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 8
REF="$DEPFS_STATE/ref"
mkdir -p "$REF"

# strip_of PATH STRIPE UNIT -> "server strip-file local-offset"
strip_of() {
  local ino n su servers pos sid
  read -r ino n su servers < <(depfs layout get --json "$1" | json_get ino n stripe_unit servers)
  read -r -a sv <<<"$servers"
  pos=$(( ($3 + $2) % n ))
  sid=${sv[$pos]}
  echo "$sid $(io_dir "$sid")/strips/$(printf '%016x' "$ino") $(( $2 * su ))"
}

flip() { # FILE OFFSET: xor one byte in place (again: undone)
  python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    off = int(sys.argv[2]); f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5a]))
PY
}

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
  # damage units 0..m-1 of stripe 2 one at a time (for n-k >= 2 the last
  # is a parity unit: k+m-1), reading back after each
  flips=()
  for j in $(seq 0 $((m - 1))); do
    u=$j; [ "$j" -eq $((m - 1)) ] && [ "$m" -ge 2 ] && u=$((n - 1))
    read -r sid strip off < <(strip_of "$d/f" 2 "$u")
    before=$(damaged_total)
    flip "$strip" $((off + 1000 + 97 * j))
    flips+=("$strip $((off + 1000 + 97 * j))")
    read_back "$d/f" "$REF/$L" ||
      fail "$L: with $((j + 1)) damaged unit(s) (unit $u on server $sid) the read did not return the written bytes: $(cat "$DEPFS_STATE/back.err")"
    after=$(damaged_total)
    [ "$after" -gt "$before" ] || fail "$L: depfs status counted no damaged block ($before -> $after)"
    log "$L: unit $u of stripe 2 damaged on server $sid: read back exact (damaged blocks seen $before -> $after)"
  done
  # one more than the code can tell: the read must fail, not lie
  read -r sid strip off < <(strip_of "$d/f" 2 $((m == 1 ? 1 : m - 1)))
  flip "$strip" $((off + 4321))
  flips+=("$strip $((off + 4321))")
  if depfs cp "depfs:$d/f" "$DEPFS_STATE/back" 2> "$DEPFS_STATE/back.err"; then
    cmp -s "$REF/$L" "$DEPFS_STATE/back" && fail "$L: read exact with $((m + 1)) damaged units: the damage was not where it was meant to be"
    fail "$L: $((m + 1)) damaged units of a stripe: the read returned WRONG bytes instead of failing"
  fi
  log "$L: $((m + 1)) damaged units: the read fails ($(tail -1 "$DEPFS_STATE/back.err"))"
  flip ${flips[-1]} # beyond n-k: undone by hand; the rest is scrub's
  depfs scrub --repair "$d/f" > "$DEPFS_STATE/repair.out" 2>&1 ||
    { cat "$DEPFS_STATE/repair.out"; fail "$L: scrub --repair left damage"; }
  grep -q "$m checksum" "$DEPFS_STATE/repair.out" ||
    { cat "$DEPFS_STATE/repair.out"; fail "$L: scrub did not name the $m damaged units by checksum"; }
  read_back "$d/f" "$REF/$L" || fail "$L: not exact after the repair"
  log "$L: scrub --repair rebuilt the $m damaged units"
done

# ---- a strip file deleted by hand, and one cut short
read -r sid strip off < <(strip_of /L8_6/f 1 0)
cp "$strip" "$DEPFS_STATE/saved-strip"; rm "$strip"
rejoined=$(grep -c "ioserver $sid: rejoined" "$DEPFS_STATE/logs/recovery.log" || true)
lc restart "$sid" >/dev/null # no cached descriptor: the loss shows
deadline=$((SECONDS + $(tscale 60)))
until [ "$(grep -c "ioserver $sid: rejoined" "$DEPFS_STATE/logs/recovery.log" || true)" -gt "$rejoined" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "server $sid did not rejoin after its restart: $(states_line)"
  sleep 0.2
done
wait_all_up 60 || fail "servers not up after restarting $sid: $(states_line)"
read_back /L8_6/f "$REF/8@6" || fail "8@6: a deleted strip file on server $sid: not read back exact: $(cat "$DEPFS_STATE/back.err")"
grep -q "missing beside its checksums" "$DEPFS_STATE/logs/ioserver-$sid.log" ||
  fail "server $sid did not report its strip file missing"
log "8@6: strip file deleted on server $sid: read back exact (reported missing, not read as zeros)"
depfs scrub --repair /L8_6/f > "$DEPFS_STATE/repair.out" 2>&1 ||
  { cat "$DEPFS_STATE/repair.out"; fail "8@6: scrub --repair did not rebuild the lost strip file"; }
grep -q "missing" "$DEPFS_STATE/repair.out" || { cat "$DEPFS_STATE/repair.out"; fail "8@6: the lost strip was not named missing"; }
cmp "$strip" "$DEPFS_STATE/saved-strip" || fail "8@6: the rebuilt strip file differs from the lost one"

read -r sid strip off < <(strip_of /L4_2/f 0 1)
cp "$strip" "$DEPFS_STATE/saved-strip"
truncate -s $((65536 + 5000)) "$strip"
read_back /L4_2/f "$REF/4@2" || fail "4@2: a strip file cut short on server $sid: not read back exact: $(cat "$DEPFS_STATE/back.err")"
log "4@2: strip file cut short on server $sid: read back exact"
depfs scrub --repair /L4_2/f > "$DEPFS_STATE/repair.out" 2>&1 ||
  { cat "$DEPFS_STATE/repair.out"; fail "4@2: scrub --repair did not rebuild the cut strip file"; }
cmp "$strip" "$DEPFS_STATE/saved-strip" || fail "4@2: the rebuilt strip file differs from the cut one"

for L in 8@6 8@7 4@2 8@4; do
  n=${L%@*}; k=${L#*@}
  cmp "$REF/$L" "$MNT/L${n}_$k/f" || fail "$L: differs through the mount"
done
scrub_clean
echo "PASS: damaged units (1..n-k per stripe, data and parity), a deleted and a truncated strip file are read around and repaired by scrub; n-k+1 damaged units fail the read; for 8@6 8@7 4@2 8@4"
