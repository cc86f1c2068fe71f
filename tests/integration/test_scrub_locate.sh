#!/usr/bin/env bash
# test_scrub_locate - scrub names exactly the bad units (stripe, unit,
# data/parity, server, cause), no more and no fewer, and --repair rebuilds
# exactly those from the good units, never parity from bad data:
#   8@6 (two parity units): bytes flipped on disk in a data unit: named by
#       its checksum; then wrong bytes stored through the server (a buggy
#       or misdirected write: its checksums are good, rawwrite.py) in a data
#       unit, in a parity unit, and in one of each in two stripes at once:
#       each is a parity mismatch located in that unit; --repair restores
#       the strip files byte for byte and a second scrub is clean;
#   8@7 (one parity unit): such a data unit is reported as an unlocated
#       mismatch and left alone (rewriting parity from it would make the
#       damage permanent); such a parity unit is rewritten from the data,
#       logged as a suspected bug;
#   a server down: each of its units is named unreachable and --repair
#       leaves them alone (depfs-recovery rebuilds a returning server);
#   strip_pread_eio (test build) on that server once back: its failed read
#       is named as an I/O error of that server's unit in the first stripe
#       re-read alone, repaired, and a read error that does not come back on
#       the re-read marks nothing.
# Every part ends with scrub --all clean and the data byte-exact.
source "$(dirname "$0")/lib.sh"
use_test_build
require_recovery
# the damage planted here is for reads and `depfs scrub` to meet first:
# no background scrub (test_background_scrub covers that one)
export DEPFS_CONF_EXTRA="scrub_rate = 0"
cluster_up --servers 8

# findings FILE: one line per finding of a scrub --json document:
# "stripe unit kind server cause repaired" (unit, kind, server "-" when none)
findings() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for fl in d["files"]:
    for f in fl["findings"]:
        v = [f["stripe"], f["unit"], f["kind"], f["server"], f["cause"], f["repaired"]]
        print(" ".join("-" if x is None else str(x).lower() for x in v))' "$1"
}
# scrub_expect NAME WANT_RC WANT_FINDINGS ARGS...: runs scrub --json ARGS,
# checks the exit status and that the findings are exactly WANT_FINDINGS
# (lines as `findings` prints them, in scrub order).
scrub_expect() {
  local name=$1 want_rc=$2 want=$3 rc=0 got; shift 3
  depfs scrub --json "$@" >"$DEPFS_STATE/$name.json" 2>"$DEPFS_STATE/$name.err" || rc=$?
  got=$(findings "$DEPFS_STATE/$name.json") ||
    { cat "$DEPFS_STATE/$name.json" "$DEPFS_STATE/$name.err"; fail "$name: scrub --json gave no findings list"; }
  if [ "$got" != "$want" ]; then
    cat "$DEPFS_STATE/$name.err"
    fail "$name: scrub $* found [${got//$'\n'/; }], want exactly [${want//$'\n'/; }]"
  fi
  [ "$rc" = "$want_rc" ] || { cat "$DEPFS_STATE/$name.err"; fail "$name: scrub $* exited $rc, want $want_rc"; }
  log "$name: scrub $* -> exit $rc, [${got//$'\n'/; }]"
}
# flip STRIP OFF LEN: XOR LEN bytes of a strip file at OFF on disk.
flip() {
  python3 - "$@" <<'PY'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(off); b = bytearray(f.read(n))
    assert len(b) == n, "strip file too short"
    f.seek(off); f.write(bytes(x ^ 0xA5 for x in b))
PY
}
# corrupt STRIP OFF LEN: store those LEN bytes XOR 0xA5 through server SID
# (checksums good, content wrong); again undoes it.
addr_of() { awk -v id="$1" '$1 == "ioserver" && $3 == id {print $4}' "$CONF"; }
corrupt() {
  python3 "$TOP/tests/integration/rawwrite.py" "$(addr_of "$SID")" "$INO" "$2" --xor-from "$1" "$3" \
    >/dev/null || fail "rawwrite to server $SID failed"
}
# read_back PATH REF: a fresh client's copy (no mount cache) equals REF.
read_back() {
  rm -f "$DEPFS_STATE/back"
  depfs cp "depfs:$1" "$DEPFS_STATE/back" || fail "cannot read $1 back"
  cmp "$DEPFS_STATE/back" "$2" || fail "$1 differs from what was written"
}
# make_file DIR LAYOUT STRIPES: a file of STRIPES full stripes and a bit in
# DIR; sets INO N K SU SERVERS[] REF.
make_file() {
  local dir=$1 lay=$2 stripes=$3 servers
  mkdir "$MNT$dir"; setfattr -n user.depfs.layout -v "$lay" "$MNT$dir"
  read -r N K SU < <(depfs layout get --json "$dir" | json_get n k stripe_unit)
  REF="$DEPFS_STATE/ref${dir//\//_}"
  head -c $((stripes * K * SU + 777)) /dev/urandom >"$REF"
  cp "$REF" "$MNT$dir/f" && sync "$MNT$dir/f"
  read -r INO servers < <(depfs layout get --json "$dir/f" | json_get ino servers)
  read -r -a SERVERS <<<"$servers"
  [ "${#SERVERS[@]}" = "$N" ] || fail "layout of $dir/f: ${#SERVERS[@]} servers, want $N"
}
# unit_at STRIPE UNIT: sets POS SID STRIP OFF of that unit (rotation as
# common/layout.c: position = (unit + stripe) mod n).
unit_at() {
  POS=$(( ($2 + $1) % N )); SID=${SERVERS[$POS]}
  STRIP="$(io_dir "$SID")/strips/$(printf '%016x' "$INO")"
  OFF=$(( $1 * SU ))
  [ -f "$STRIP" ] || fail "no strip file $STRIP (server $SID)"
}

# ---- 8@6: located mismatches, repaired byte for byte
make_file /d86 8@6 20
REF86=$REF
read_back /d86/f "$REF86"
scrub_clean

unit_at 11 3 # data unit 3 of stripe 11: damaged on disk
cp "$STRIP" "$DEPFS_STATE/strip.orig"
log "flipping 16 bytes of data unit 3 of stripe 11 on disk (server $SID, $STRIP)"
flip "$STRIP" $((OFF + 5000)) 16
scrub_expect d86-disk 1 "11 3 data $SID checksum false" /d86/f
scrub_expect d86-disk-repair 0 "11 3 data $SID checksum true" --repair /d86/f
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "repair did not restore data unit 3 of stripe 11 on disk"
scrub_expect d86-disk-again 0 "" /d86/f
flip "$STRIP" $((OFF + 9000)) 16 # again: this time a read meets it first
read_back /d86/f "$REF86"        # read around it, and rebuilt in place
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "the read did not rebuild data unit 3 of stripe 11 on disk"
scrub_expect d86-disk-healed 0 "" /d86/f

unit_at 5 2 # data unit 2 of stripe 5
cp "$STRIP" "$DEPFS_STATE/strip.orig"
log "storing 16 wrong bytes in data unit 2 of stripe 5 (server $SID, $STRIP), checksums good"
corrupt "$STRIP" $((OFF + 1000)) 16
scrub_expect d86-data 1 "5 2 data $SID mismatch false" /d86/f
depfs scrub /d86/f >"$DEPFS_STATE/text.out" 2>&1 || true
grep -q "^scrub: /d86/f (inode $INO) stripe 5 unit 2 (data) on server $SID: parity mismatch" "$DEPFS_STATE/text.out" ||
  { cat "$DEPFS_STATE/text.out"; fail "the text output does not name stripe 5 unit 2 on server $SID"; }
grep -q "1 inconsistent" "$DEPFS_STATE/text.out" || { cat "$DEPFS_STATE/text.out"; fail "summary line changed"; }
scrub_expect d86-data-repair 0 "5 2 data $SID mismatch true" --repair /d86/f
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "repair did not restore data unit 2 of stripe 5 on disk"
scrub_expect d86-data-again 0 "" /d86/f
read_back /d86/f "$REF86"

unit_at 9 7 # parity unit 1 (unit k+1) of stripe 9
cp "$STRIP" "$DEPFS_STATE/strip.orig"
log "storing 1 wrong byte in parity unit 7 of stripe 9 (server $SID)"
corrupt "$STRIP" $((OFF + SU - 1)) 1
scrub_expect d86-parity 1 "9 7 parity $SID mismatch false" /d86/f
scrub_expect d86-parity-repair 0 "9 7 parity $SID mismatch true" --repair /d86/f
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "repair did not restore parity unit 7 of stripe 9 on disk"
scrub_expect d86-parity-again 0 "" /d86/f

unit_at 3 0; S1=$SID; P1=$STRIP; cp "$STRIP" "$DEPFS_STATE/strip1.orig"; corrupt "$STRIP" $((OFF + 4096)) 4096
unit_at 12 6; S2=$SID; P2=$STRIP; cp "$STRIP" "$DEPFS_STATE/strip2.orig"; corrupt "$STRIP" "$OFF" 100
log "wrong bytes in data unit 0 of stripe 3 (server $S1) and parity unit 6 of stripe 12 (server $S2)"
scrub_expect d86-two 1 "3 0 data $S1 mismatch false
12 6 parity $S2 mismatch false" /d86/f
scrub_expect d86-two-repair 0 "3 0 data $S1 mismatch true
12 6 parity $S2 mismatch true" --repair /d86/f
cmp "$P1" "$DEPFS_STATE/strip1.orig" || fail "data unit 0 of stripe 3 not restored on disk"
cmp "$P2" "$DEPFS_STATE/strip2.orig" || fail "parity unit 6 of stripe 12 not restored on disk"
read_back /d86/f "$REF86"
scrub_clean

# ---- 8@7: nothing can be located with one parity unit
make_file /d87 8@7 12
REF87=$REF
scrub_clean
unit_at 4 3 # data unit 3 of stripe 4
cp "$STRIP" "$DEPFS_STATE/strip.orig"
corrupt "$STRIP" $((OFF + 77)) 8
log "wrong bytes in data unit 3 of stripe 4 (server $SID): not locatable with n-k = 1"
scrub_expect d87-data 1 "4 - - - mismatch_unlocated false" /d87/f
depfs scrub /d87/f >"$DEPFS_STATE/text.out" 2>&1 || true
grep -q "^scrub: /d87/f (inode $INO) stripe 4: parity mismatch with good checksums, unit not located - not repaired" \
  "$DEPFS_STATE/text.out" || { cat "$DEPFS_STATE/text.out"; fail "the text output does not report the unlocated mismatch"; }
corrupt "$STRIP" $((OFF + 77)) 8 # undo by hand: no checksum says which unit is wrong
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "undoing the wrong bytes of stripe 4 failed"
scrub_expect d87-undone 0 "" /d87/f

unit_at 6 7 # the parity unit of stripe 6
cp "$STRIP" "$DEPFS_STATE/strip.orig"
corrupt "$STRIP" $((OFF + 5)) 3
log "wrong bytes in the parity unit of stripe 6 (server $SID)"
scrub_expect d87-parity-repair 0 "6 - - - mismatch_unlocated true" --repair /d87/f
grep -q "suspected bug" "$DEPFS_STATE/d87-parity-repair.err" ||
  { cat "$DEPFS_STATE/d87-parity-repair.err"; fail "rewriting parity of an unlocated mismatch was not logged as a suspected bug"; }
cmp "$STRIP" "$DEPFS_STATE/strip.orig" || fail "the parity unit of stripe 6 was not rewritten right"
read_back /d87/f "$REF87"
scrub_clean

# ---- a server down: its units are counted as unreachable, never repaired
X=${SERVERS[2]} # of /d87/f: position 2, which holds unit 2 (data) of stripe 0
log "server $X killed"
kill_down "$X"
want=""
for s in $(seq 0 12); do
  u=$(( (2 - s % N + N) % N )); kind=data; [ "$u" -lt "$K" ] || kind=parity
  want+="${want:+$'\n'}$s $u $kind $X unreachable false"
done
scrub_expect down 1 "$want" --repair /d87/f
read_back /d87/f "$REF87" # decoded around it

# ---- strip_pread_eio on that server: its unit is named as an I/O error
# restart_faulty FAULTS: server X back with DEPFS_FAULTS=FAULTS, rejoined.
restart_faulty() {
  log "server $X restarted with DEPFS_FAULTS=$1"
  DEPFS_FAULTS=$1 restart_rejoined "$X" 60
}
fires() { grep -c "fault point strip_pread_eio fires" "$DEPFS_STATE/logs/ioserver-$X.log" || true; }
# /d87/f has a unit on every server in every stripe. Read errors 1 and 2
# fail the batch read and the re-read of stripe 0 alone: unit 2 of stripe 0.
restart_faulty strip_pread_eio=2
scrub_expect eio-repair 0 "0 2 data $X io_error true" --repair /d87/f
[ "$(fires)" = 2 ] || fail "strip_pread_eio fired $(fires) times on server $X, want 2"
scrub_expect eio-again 0 "" /d87/f
# one read error, gone on the re-read: nothing is bad
restart_faulty strip_pread_eio=1
scrub_expect eio-transient 0 "" /d87/f
[ "$(fires)" = 3 ] || fail "strip_pread_eio fired $(fires) times on server $X in all, want 2 + 1"
[ "$(locks_held)" = 0 ] || fail "locks left held after scrubs with failed reads: $(locks_held)"
read_back /d87/f "$REF87"
read_back /d86/f "$REF86"
scrub_clean
echo "PASS: scrub named exactly the damaged units (8@6: a disk flip by its checksum, wrong bytes with good checksums located; all repaired byte for byte; 8@7: unlocated, data left alone, parity rewritten) and a server's read error as io_error of its unit; second scrubs clean"
