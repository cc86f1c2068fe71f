#!/usr/bin/env bash
# test_bench_chart - make bench's chart (tests/bench/chart-results): a
# results table as run-bench writes it becomes a PNG with, for every row
# that has a reference, a grey reference bar and a DePFS bar beside it
# whose height follows the ratio (blue over grey area is the mean ratio,
# whatever the axis: 0.6 for ratios 0.4 and 0.8, 1.2 at twice those), and
# a red target dot; rows without a reference
# or ratio are left out; without gnuplot it says so, exits 0 and draws
# nothing; a table with no chartable row fails. No cluster (the chart
# reads a file): nothing to scrub.
source "$(dirname "$0")/lib.sh"
CHART="$TOP/tests/bench/chart-results"
W="$DEPFS_STATE/chart"; mkdir -p "$W"
command -v gnuplot >/dev/null || fail "gnuplot is not installed (deploy/install-deps installs gnuplot-nox)"

table() { # table RATIO_SCALE: a results.md of four rows, DePFS at RATIO_SCALE x 0.40/0.80
  cat <<MD
# DePFS benchmark results

2026-11-25 12:00 UTC, 2 CPUs, test table

| benchmark | depfs | reference | ratio | target | met? |
| --- | ---: | ---: | ---: | --- | --- |
| write 8@6 MB/s | $(awk -v s="$1" 'BEGIN { printf "%.1f", 400 * s }') | 1000.0 | $(awk -v s="$1" 'BEGIN { printf "%.2f", 0.40 * s }') | >= 0.50 | no |
| create ops/s | $(awk -v s="$1" 'BEGIN { printf "%.1f", 800 * s }') | 1000.0 | $(awk -v s="$1" 'BEGIN { printf "%.2f", 0.80 * s }') | - | - |
| strided 64k x2 nack rate | 0.1875 | - | n/a | - | - |
| reconstruct MB/s | 12.0 | 0 | n/a | - | - |
MD
}
# png_stats FILE: "WIDTH HEIGHT BLUE GREY RED", pixels of the DePFS, the
# reference and the target colours (8-bit RGB PNG as gnuplot's pngcairo writes it)
png_stats() {
  python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _c, _f, interlace = ihdr
channels = {2: 3, 6: 4}[ctype]
assert depth == 8 and interlace == 0, "unexpected PNG format"
raw, stride, prev, rows = zlib.decompress(idat), w * channels, bytearray(w * channels), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b, c = prev[i], prev[i - channels] if i >= channels else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
def count(rgb, tol=24):
    return sum(1 for line in rows for x in range(w)
               if all(abs(line[x * channels + k] - rgb[k]) <= tol for k in range(3)))
print(w, h, count((0x1f, 0x77, 0xb4)), count((0x9a, 0x9a, 0x9a), 4), count((0xd6, 0x27, 0x28)))
PY
}

log "a table of four rows, two of them with a reference: two pairs of bars and a target"
table 1 >"$W/one.md"
out=$("$CHART" "$W/one.md" "$W/one.png") || fail "chart-results failed: $out"
[[ "$out" == *"2 rows charted"* ]] || fail "chart-results charted other rows: $out"
read -r w h blue grey red <<<"$(png_stats "$W/one.png")" || fail "the chart is not a PNG we can read"
echo "one.png: ${w}x$h, DePFS $blue px, reference $grey px, target $red px"
[ "$w" -ge 800 ] && [ "$h" = 720 ] || fail "the chart is ${w}x$h"
[ "$blue" -gt 1000 ] || fail "no DePFS bars drawn ($blue px)"
[ "$grey" -gt 1000 ] || fail "no reference bars drawn ($grey px)"
[ "$red" -gt 10 ] || fail "no target drawn ($red px)"

# near WANT: blue/grey within 15% of WANT (the mean ratio of the table)
near() { awk -v b="$1" -v g="$2" -v want="$3" 'BEGIN { r = b / g; exit !(r > 0.85 * want && r < 1.15 * want) }'; }
near "$blue" "$grey" 0.6 || fail "DePFS over reference area $blue/$grey, not the mean ratio 0.6"

log "the same table with DePFS at twice the ratio: DePFS over reference area 1.2"
table 2 >"$W/two.md"
"$CHART" "$W/two.md" "$W/two.png" >/dev/null || fail "chart-results failed on the second table"
read -r _w _h blue2 grey2 _red <<<"$(png_stats "$W/two.png")"
echo "two.png: DePFS $blue2 px, reference $grey2 px"
near "$blue2" "$grey2" 1.2 || fail "DePFS over reference area $blue2/$grey2, not the mean ratio 1.2"

log "no chartable row: a clear failure"
head -6 "$W/one.md" >"$W/empty.md"
if "$CHART" "$W/empty.md" "$W/empty.png" 2>"$W/err"; then fail "a table without rows was charted"; fi
grep -q "no rows with a reference" "$W/err" || fail "unclear message: $(cat "$W/err")"

log "without gnuplot: a clear message, exit 0, no chart"
mkdir -p "$W/bin"
for t in bash awk grep cut wc mktemp rm cat head; do ln -sf "$(command -v "$t")" "$W/bin/$t"; done
PATH="$W/bin" "$CHART" "$W/one.md" "$W/none.png" 2>"$W/err" || fail "chart-results failed without gnuplot"
grep -q "gnuplot not found" "$W/err" || fail "no message without gnuplot: $(cat "$W/err")"
[ ! -e "$W/none.png" ] || fail "a chart appeared without gnuplot"

echo "PASS: chart-results draws each reference and DePFS beside it, bars following the ratios, skips rows without a reference, fails on an empty table and skips cleanly without gnuplot"
