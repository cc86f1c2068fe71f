# lib.sh - helpers shared by the bench scripts (sourced, not run).
#
# median_pair "D R"...: of rounds measured back to back (D = DePFS, R = its
# reference, same load), the pair whose ratio D/R is the median (the lower
# middle for an even count), printed as "D R". On this shared machine a
# side's best of N rounds follows the luckiest moment of that side alone, so
# the side whose numbers swing more wins the comparison; a back-to-back pair
# sees one load and its ratio swings much less.
median_pair() {
    printf '%s\n' "$@" | awk '{ printf "%.6f %s %s\n", ($2 > 0 ? $1 / $2 : 0), $1, $2 }' |
        sort -n | awk '{ v[NR] = $2 " " $3 } END { print v[int((NR + 1) / 2)] }'
}

# purge_wait DEPFS_CLI CONF: returns once the MDS's purge queue is empty
# (bounded: PURGE_WAIT_S, default 60; then a note and on), for a bench to
# call after it removed a file and before its next timed run. A DePFS unlink
# returns once the MDS commit is durable and the strip files go in the
# background (README "Removing files"), where ext4 frees a file's blocks before
# unlink returns: without the wait the servers removed the last run's
# gigabyte during the next one, and the faster side lost more to it.
# Neither side's removal is what a row measures.
purge_wait() {
    local cli=$1 conf=$2 deadline=$((SECONDS + ${PURGE_WAIT_S:-60})) line
    while :; do
        line=$("$cli" --config "$conf" status 2>/dev/null | grep '^purge queue:') || line=
        case "$line" in "purge queue: 0 files"*) return 0 ;; esac
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "purge_wait: ${line:-no status} after ${PURGE_WAIT_S:-60} s: going on" >&2
            return 0
        fi
        sleep 0.2
    done
}

# publish_results RESULTS_MD DOC: replace the "last published run" section of
# DOC (docs/BENCH-RESULTS.md: the lines between its last-run:begin and
# last-run:end markers) with RESULTS_MD, its heading demoted two levels. The
# rest of DOC (the history) is kept as it is. Status 1 when DOC lacks the
# markers.
publish_results() {
    local results=$1 doc=$2 tmp
    grep -q '^<!-- last-run:begin' "$doc" && grep -q '^<!-- last-run:end' "$doc" || {
        echo "publish_results: $doc has no last-run markers" >&2
        return 1
    }
    tmp=$(mktemp "$doc.XXXXXX")
    awk -v results="$results" '
        /^<!-- last-run:begin/ { print; while ((getline line < results) > 0) {
                                     if (line ~ /^# /) line = "##" line; print line }
                                 skip = 1; next }
        /^<!-- last-run:end/ { skip = 0 }
        !skip' "$doc" >"$tmp" && cat "$tmp" >"$doc"
    rm -f "$tmp"
}

# randw FILE MIB SECONDS: 4 KiB writes at random 4 KiB-aligned offsets of
# FILE (MIB long) for SECONDS, then fsync (counted); prints the IOPS.
# DEPFS_BENCH_RANDW_TRACE=PATH: also appends "epoch_s writes" every 64 writes.
randw() {
    python3 - "$@" <<'PY'
import os, random, sys, time
path, mib, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
trace = os.environ.get("DEPFS_BENCH_RANDW_TRACE")
trace = open(trace, "a") if trace else None
blocks = mib * 256
buf = os.urandom(4096)
rng = random.Random(42)
fd = os.open(path, os.O_WRONLY)
n = 0
t0 = time.monotonic()
end = t0 + secs
while True:
    for _ in range(64):
        os.pwrite(fd, buf, rng.randrange(blocks) * 4096)
    n += 64
    if trace:
        trace.write(f"{time.time():.3f} {n}\n")
    if time.monotonic() >= end:
        break
os.fsync(fd)
os.close(fd)
print(f"{n / (time.monotonic() - t0):.0f}")
PY
}
