#!/usr/bin/env bash
# test_scrub_detects - proves scrub can fail: flip one byte of a parity unit
# in a strip file on disk; scrub must report the stripe, name the unit and
# its server, and exit non-zero; scrub --repair fixes it (exit 0: nothing
# left) and restores the strip file; the data is unchanged throughout.
# (tests/integration/test_scrub_locate.sh covers data units, 8@7 and read
# errors.)
source "$(dirname "$0")/lib.sh"
# the damage planted here is for reads and `depfs scrub` to meet first:
# no background scrub (test_background_scrub covers that one)
export DEPFS_CONF_EXTRA="scrub_rate = 0"
cluster_up --servers 8
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom > "$DEPFS_STATE/src"
cp "$DEPFS_STATE/src" "$MNT/d/f"
cmp "$DEPFS_STATE/src" "$MNT/d/f" || fail "copy differs"
scrub_clean

ino=$(stat -c %i "$MNT/d/f")
read -r k servers < <(depfs layout get --json /d/f | json_get k servers)
read -r -a servers <<<"$servers"
# parity unit P0 of stripe 0 is unit k, on servers[k]
sid=${servers[$k]}
dir=$(io_dir "$sid")
strip="$dir/strips/$(printf '%016x' "$ino")"
[ -f "$strip" ] || fail "strip file $strip not found (ino $ino, server $sid)"
cp "$strip" "$DEPFS_STATE/strip.orig"
log "corrupting byte 100 of $strip (parity of stripe 0 on server $sid)"
python3 - "$strip" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(100); b = f.read(1); f.seek(100); f.write(bytes([b[0] ^ 0x5a]))
PY
if depfs scrub /d/f > "$DEPFS_STATE/scrub.out" 2>&1; then
  cat "$DEPFS_STATE/scrub.out"; fail "scrub did not notice a corrupted parity unit"
fi
cat "$DEPFS_STATE/scrub.out"
grep -q "1 checksum" "$DEPFS_STATE/scrub.out" || fail "scrub output does not count the damaged unit"
# and --json says which unit: parity unit k of stripe 0, on servers[k], by
# its checksum (the byte changed on disk, behind the server's back)
if depfs scrub --json /d/f > "$DEPFS_STATE/scrub.json"; then fail "scrub --json exits 0 on a corrupted parity unit"; fi
read -r n_found unit kind server cause < <(python3 -c 'import json, sys
f = json.load(sys.stdin)["files"][0]["findings"]
print(len(f), *([f[0][x] for x in ("unit", "kind", "server", "cause")] if f else []))' <"$DEPFS_STATE/scrub.json")
[ "$n_found $unit $kind $server $cause" = "1 $k parity $sid checksum" ] ||
  fail "scrub --json named [$n_found $unit $kind $server $cause], want [1 $k parity $sid checksum]"
grep -q "stripe 0 unit $k (parity) on server $sid: checksum mismatch" "$DEPFS_STATE/scrub.out" ||
  fail "scrub's text does not name unit $k on server $sid"
depfs scrub --repair /d/f || fail "scrub --repair left something unrepaired"
cmp "$strip" "$DEPFS_STATE/strip.orig" || fail "the parity unit was not restored on disk"
cmp "$DEPFS_STATE/src" "$MNT/d/f" || fail "data changed"
scrub_clean
echo "PASS: scrub caught a corrupted parity unit; repair made it clean"
