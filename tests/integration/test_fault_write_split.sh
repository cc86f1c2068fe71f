#!/usr/bin/env bash
# test_fault_write_split - a write whose plan goes stale half-way must not
# leave a torn stripe (campaign seed 14 round 6: 65305 fsync-acknowledged
# bytes of an 8@7 file lost after two stalled servers). A writer planned a
# round with server S3 down; S3 came back and the new epoch reached some of
# the servers it writes to but not others: those that knew refused the
# write (planned with S3 down), the others stored it. The writer released
# the torn stripe and redid the round by decoding from a new and an old
# unit, which stored parity for garbage; a later decoding read returned it.
# The writer must finish the write as planned where it was refused.
# splitwrite.py drives the interleaving (DEPFS_TEST_PAUSE=after_lock in
# the test build, depfs-recovery stopped so that only it changes states).
source "$(dirname "$0")/lib.sh"
use_test_build
cluster_up --servers 4
lc kill recovery >/dev/null
head -c $((4 * 2 * 4096)) /dev/urandom > "$DEPFS_STATE/ref"
depfs cp "$DEPFS_STATE/ref" "depfs@4@2@4k:/f" || fail "copy in failed"
read -r servers < <(depfs layout get --json /f | json_get servers)
read -r -a sv <<<"$servers"
log "/f on servers ${sv[*]} (stripe 0: unit u on ${sv[0]},${sv[1]},${sv[2]},${sv[3]})"
lc kill "${sv[1]}" >/dev/null # holds data unit 1 of stripe 0: decoded from then on
DEPFS_TEST_PAUSE=after_lock DEPFS_TEST_PAUSE_MS=4000 \
  python3 "$TOP/tests/integration/splitwrite.py" --lib "$LIBDEPFS_SO" --conf "$CONF" --path /f \
  --ref "$DEPFS_STATE/ref" --servers "$(IFS=,; echo "${sv[*]}")" 2> "$DEPFS_STATE/split.err" ||
  { grep -E "WARN|ERR" "$DEPFS_STATE/split.err" | tail -8; fail "the torn write lost data (see above)"; }
grep -q "DEPFS_TEST_PAUSE reached: after_lock" "$DEPFS_STATE/split.err" || fail "the writer never paused"
grep -h "cluster changed during the write" "$DEPFS_STATE/split.err" | tail -1
lc restart "${sv[1]}" >/dev/null
lc restart recovery >/dev/null
wait_all_up 60 || fail "servers not up: $(states_line)"
depfs cp depfs:/f "$DEPFS_STATE/back" && cmp "$DEPFS_STATE/ref" "$DEPFS_STATE/back" ||
  fail "the file differs from what was acknowledged after every server rejoined"
scrub_clean
echo "PASS: a write whose plan went stale half-way finished where it was refused; decoded reads and every server agree"
