#!/usr/bin/env bash
# test_extreme_values - every MDS and I/O server request with extreme values
# in every field (tests/tools/extreme_walk: driven by the protobuf
# descriptors; 0, 1, max-1, max, 2^31, 2^32, 2^63, 2^64-1, the edges of
# DePFS's own bounds; empty, NUL-holding, too long, non-UTF-8 strings, "/"
# and ".."; repeated fields at their count limit and one past it). Each
# request must get a clean reply, the out-of-bounds ones a refusal; every
# daemon keeps serving (same pids, good requests answered, I/O servers UP).
# Afterwards the cluster is sane: the mount stats, lists and removes
# whatever the walk created, a new file reads back, scrub --all is clean.
source "$(dirname "$0")/lib.sh"
WALK="$DEPFS_BIN_DIR/../tests/tools/extreme_walk"
WALK_DIR=extreme-walk
[ -x "$WALK" ] || fail "no $WALK (make builds it)"

cluster_up --servers 8
W="$DEPFS_STATE/work"; mkdir -p "$W"
daemon_pids() { cat "$DEPFS_STATE"/pids/{mds,ioserver-*,recovery}.pid 2>/dev/null | sort | tr '\n' ' '; }
before=$(daemon_pids)

log "walk every request of the MDS and of I/O servers 0 and 5"
start=$SECONDS
rc=0
san_host "$WALK" --config "$CONF" --io 0 --io 5 > "$W/walk.out" 2>&1 || rc=$?
grep -v '^FAIL' "$W/walk.out"
grep '^FAIL' "$W/walk.out" | head -50 || true
[ $rc -eq 0 ] || fail "extreme_walk reported failures (exit $rc)"
log "walk took $((SECONDS - start)) s"
[ "$(daemon_pids)" = "$before" ] || fail "a daemon died or restarted during the walk: before '$before', after '$(daemon_pids)'"
for name in mds ioserver-0 ioserver-5; do
  grep -q "refused" "$DEPFS_STATE/logs/$name.log" || fail "$name logged no refusal"
done

log "the mount stats, lists and removes everything the walk created"
settle_clients # the kernel's attribute cache forgets what it saw before
entries=$(find "$MNT" -mindepth 1 | wc -l)
[ "$entries" -gt 100 ] || fail "only $entries entries after the walk"
find "$MNT" -mindepth 1 -print0 | xargs -0 stat > "$W/stat.out" || fail "stat failed on an entry the walk made"
ls -laR "$MNT" > "$W/ls.out" || fail "ls -laR failed"
log "$entries entries stat and list"
rm -rf "${MNT:?}/$WALK_DIR" || fail "rm -rf $WALK_DIR failed"
find "$MNT" -mindepth 1 -maxdepth 1 -print0 | xargs -0 -r rm -rf || fail "removing the walk's entries in / failed"
[ -z "$(ls -A "$MNT")" ] || fail "left after removal: $(ls -A "$MNT" | head -5)"

log "times: 2200 is set and shown, 3000 (past what 64 bits of ns hold) is refused"
touch "$MNT/t"
touch -d '2200-01-01 00:00:00 UTC' "$MNT/t" || fail "touch -d 2200 failed"
if touch -d '3000-01-01 00:00:00 UTC' "$MNT/t" 2> "$W/touch.err"; then
  fail "touch -d 3000 was accepted: $(stat -c %y "$MNT/t")"
fi
grep -q "out of range" "$W/touch.err" || fail "touch -d 3000: $(cat "$W/touch.err")"
settle_clients
year=$(stat -c %y "$MNT/t" | cut -c1-4)
[ "$year" = 2200 ] || fail "mtime of t is $(stat -c %y "$MNT/t"), not in 2200"
rm "$MNT/t"

log "a new file reads back; every server up; scrub clean"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom > "$W/src"
cp "$W/src" "$MNT/after" || fail "write after the walk"
settle_clients
cmp "$W/src" "$MNT/after" || fail "the file written after the walk reads back wrong"
wait_all_up 30
scrub_clean
echo "PASS: $(grep -c '^MDS\|^IO' "$W/walk.out") ops walked, every request answered, daemons alive, cluster sane"
