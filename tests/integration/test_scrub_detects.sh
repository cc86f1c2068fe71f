#!/usr/bin/env bash
# test_scrub_detects - proves scrub can fail: flip one byte of a parity unit
# in a strip file on disk; scrub must report the stripe and exit non-zero;
# scrub --repair fixes it; the data is unchanged throughout.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 8
mkdir "$MNT/d"; setfattr -n user.depfs.layout -v 8@6 "$MNT/d"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom > "$DEPFS_STATE/src"
cp "$DEPFS_STATE/src" "$MNT/d/f"
cmp "$DEPFS_STATE/src" "$MNT/d/f" || fail "copy differs"
scrub_clean

ino=$(stat -c %i "$MNT/d/f")
lay=$(depfs layout get /d/f)
servers=$(echo "$lay" | sed -E 's/.*servers=([0-9,]+).*/\1/')
k=$(echo "$lay" | sed -E 's/.*k=([0-9]+).*/\1/')
# parity unit P0 of stripe 0 is unit k, on servers[k]
sid=$(echo "$servers" | cut -d, -f$((k + 1)))
dir=$(awk -v id="$sid" '$1 == "ioserver" && $3 == id {print $5}' "$CONF")
strip="$dir/strips/$(printf '%016x' "$ino")"
[ -f "$strip" ] || fail "strip file $strip not found (ino $ino, server $sid)"
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
grep -qi "inconsistent" "$DEPFS_STATE/scrub.out" || fail "scrub output does not name the inconsistency"
depfs scrub --repair /d/f || true
cmp "$DEPFS_STATE/src" "$MNT/d/f" || fail "data changed"
scrub_clean
echo "PASS: scrub caught a corrupted parity unit; repair made it clean"
