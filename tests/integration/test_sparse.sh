#!/usr/bin/env bash
# test_sparse - space accounting and holes on the mount (issue 14): a 3 GiB
# sparse file holding 1 MiB at three offsets (one not unit-aligned) shows
# st_blocks and du close to its data, not its size; a SEEK_DATA/SEEK_HOLE
# walk finds exactly the written ranges rounded out to stripe units;
# cp --sparse=always (mount -> local, local -> mount) and tar -S round-trip
# with identical bytes and sparse copies; a shrinking truncate lowers
# st_blocks; with one I/O server stopped every written byte is still data
# (no false hole) and cp/tar of a sparse file still round-trip exactly.
# Ends with a clean scrub.
source "$(dirname "$0")/lib.sh"
cluster_up --servers 8
W="$DEPFS_STATE/work"; mkdir -p "$W"
SW="$TOP/tests/integration/sparsewalk.py"
MiB=$((1 << 20)); GiB=$((1 << 30))
SIZE=$((3 * GiB))
# three 1 MiB ranges: a unit-aligned one, one starting 1000 bytes into a
# unit, one ending at the file's end
RANGES="$((100 * MiB)):$MiB $((2 * GiB + 3 * 65536 + 1000)):$MiB $((SIZE - MiB)):$MiB"
DATA=$((3 * MiB))

log "a 3 GiB sparse file with 3 x 1 MiB written"
python3 "$SW" make "$MNT/big" "$SIZE" $RANGES
python3 "$SW" make "$W/big.ref" "$SIZE" $RANGES
read -r n k su < <(depfs layout get --json /big | json_get n k stripe_unit)
[ "$n@$k@$su" = 8@6@65536 ] || fail "layout $n@$k@$su, expected the default 8@6@64k"
[ "$(stat -c %s "$MNT/big")" = "$SIZE" ] || fail "size $(stat -c %s "$MNT/big")"

log "st_blocks and du"
# the data's share of the strip files' allocation: the data itself, plus at
# most (n-k)(k-1)/n units of parity share per partly written stripe (two
# per range), FS blocks rounded: 3 MiB <= bytes <= 3 MiB + 6 x 80 KiB + 64 KiB
lo=$DATA; hi=$((DATA + 6 * (n - k) * (k - 1) * su / n + 65536))
for _ in $(seq 30); do # the kernel may hold the attributes of the write for attr_timeout
    bytes=$(( $(stat -c %b "$MNT/big") * $(stat -c %B "$MNT/big") ))
    [ "$bytes" -ge "$lo" ] && [ "$bytes" -le "$hi" ] && break
    sleep 0.1
done
[ "$bytes" -ge "$lo" ] && [ "$bytes" -le "$hi" ] ||
    fail "st_blocks says $bytes bytes, not within [$lo, $hi] (size $SIZE)"
du_k=$(du -k "$MNT/big" | cut -f1)
[ "$du_k" -ge $((lo / 1024)) ] && [ "$du_k" -le $((hi / 1024)) ] || fail "du says $du_k KiB"
log "st_blocks x 512 = $bytes bytes, du = $(du -h "$MNT/big" | cut -f1) (data 3 MiB, size 3 GiB)"
[ "$(du -k --apparent-size "$MNT/big" | cut -f1)" = $((SIZE / 1024)) ] || fail "du --apparent-size"

log "SEEK_DATA / SEEK_HOLE walk"
python3 "$SW" walk "$MNT/big" > "$W/walk"
python3 "$SW" expect "$su" $RANGES > "$W/expect"
diff "$W/expect" "$W/walk" || fail "the walk differs from the written ranges rounded to units"
python3 "$SW" covers "$MNT/big" $RANGES || fail "a written byte is not data"

log "cp --sparse=always and tar -S, both ways"
cp --sparse=always "$MNT/big" "$W/big.cp"
cmp "$W/big.ref" "$W/big.cp" || fail "cp --sparse=always mount -> local: bytes differ"
[ "$(du -k "$W/big.cp" | cut -f1)" -le $((hi / 1024)) ] || fail "the local copy is not sparse: $(du -h "$W/big.cp")"
cp --sparse=always "$W/big.ref" "$MNT/big.cp"
cmp "$W/big.ref" "$MNT/big.cp" || fail "cp --sparse=always local -> mount: bytes differ"
python3 "$SW" walk "$MNT/big.cp" | diff "$W/expect" - || fail "the copy on the mount has other data ranges"
tar -C "$MNT" -S -cf "$W/big.tar" big
[ "$(stat -c %s "$W/big.tar")" -lt $((DATA + 10 * MiB)) ] || fail "tar -S archived $(stat -c %s "$W/big.tar") bytes"
mkdir "$W/tx" && tar -C "$W/tx" -xf "$W/big.tar"
cmp "$W/big.ref" "$W/tx/big" || fail "tar -S round trip: bytes differ"
[ "$(du -k "$W/tx/big" | cut -f1)" -le $((hi / 1024)) ] || fail "the extracted file is not sparse"
mkdir "$MNT/tx" && tar -C "$MNT/tx" -xf "$W/big.tar"
cmp "$W/big.ref" "$MNT/tx/big" || fail "tar -S extracted onto the mount: bytes differ"

log "a shrinking truncate lowers st_blocks"
truncate -s $((SIZE - 2 * MiB)) "$MNT/big.cp"
for _ in $(seq 30); do
    after=$(( $(stat -c %b "$MNT/big.cp") * 512 ))
    [ "$after" -lt $((hi - MiB)) ] && break
    sleep 0.1
done
[ "$after" -lt $((hi - MiB)) ] || fail "st_blocks after cutting the last 1 MiB: $after bytes"

log "a dense file: st_blocks = its size"
head -c $((8 * MiB)) /dev/urandom > "$W/dense"; cp "$W/dense" "$MNT/dense"
for _ in $(seq 30); do
    dense=$(( $(stat -c %b "$MNT/dense") * 512 ))
    [ "$dense" -ge $((8 * MiB)) ] && [ "$dense" -le $((8 * MiB + 256 * 1024)) ] && break
    sleep 0.1
done
[ "$dense" -ge $((8 * MiB)) ] && [ "$dense" -le $((8 * MiB + 256 * 1024)) ] || fail "dense file: $dense bytes"
python3 "$SW" walk "$MNT/dense" | diff <(echo "0 $((8 * MiB))") - || fail "a dense file has holes"

log "one I/O server stopped"
# a smaller sparse file for the copies (everything of the stopped server
# counts as data now, so cp and tar read most of the file)
SMALL=$((96 * MiB)); SRANGES="$((5 * MiB + 777)):$MiB $((60 * MiB)):$MiB"
python3 "$SW" make "$MNT/small" "$SMALL" $SRANGES
python3 "$SW" make "$W/small.ref" "$SMALL" $SRANGES
# stop the server of the unit holding the big file's unaligned range
read -r victim _ _ < <(strip_of /big $(( (2 * GiB + 3 * 65536 + 1000) / (k * su) )) $(( (2 * GiB + 3 * 65536 + 1000) % (k * su) / su )))
kill_down "$victim"
python3 "$SW" covers "$MNT/big" $RANGES || fail "server $victim down: a written byte is not data"
python3 "$SW" covers "$MNT/small" $SRANGES || fail "server $victim down: a written byte of small is not data"
python3 "$SW" walk "$MNT/small" > "$W/walk.down"
python3 - "$W/walk.down" "$su" $SRANGES <<'PY' || fail "server down: the walk misses written data"
import sys
walk = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
for r in sys.argv[3:]:
    off, length = map(int, r.split(":"))
    for b in range(off, off + length, 4096):
        assert any(a <= b < e for a, e in walk), f"byte {b} is in no data region"
PY
cp --sparse=always "$MNT/small" "$W/small.cp"
cmp "$W/small.ref" "$W/small.cp" || fail "server down: cp --sparse=always bytes differ"
tar -C "$MNT" -S -cf "$W/small.tar" small && mkdir "$W/sx" && tar -C "$W/sx" -xf "$W/small.tar"
cmp "$W/small.ref" "$W/sx/small" || fail "server down: tar -S round trip bytes differ"
restart_rejoined "$victim" 120

cp --sparse=always "$MNT/big" "$W/big.cp2"
cmp "$W/big.ref" "$W/big.cp2" || fail "after the rejoin: bytes differ"
scrub_clean
echo "PASS: du, st_blocks, SEEK_DATA/SEEK_HOLE, cp --sparse and tar -S on sparse files"
