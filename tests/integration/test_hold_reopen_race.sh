#!/usr/bin/env bash
# test_hold_reopen_race - a file opened again in a client while that
# client's last close of it is still giving its hold back must stay held:
# the MDS processed the new open's hold before the old release, which
# dropped it, so an unlink let the purger remove the strip files under the
# open handle, whose reads then returned zeros. holdrace.py drives the
# interleaving (DEPFS_TEST_PAUSE=before_release in the test build). At
# the end the file's strip files go once the last handle is closed, and
# scrub --all is clean.
source "$(dirname "$0")/lib.sh"
require_recovery
use_test_build
cluster_up --servers 4

PAUSE_MS=3000       # the release's stop: the reopen happens within it
PURGE_BOUND_S=20    # strip files gone after the last close: a pass or two, loaded machine

head -c 3000000 /dev/urandom > "$MNT/f"
sync "$MNT/f"
ino=$(stat -c %i "$MNT/f")
dirs=$(awk '$1 == "ioserver" {print $5 "/strips"}' "$CONF" | paste -sd,)
DEPFS_TEST_PAUSE=before_release DEPFS_TEST_PAUSE_MS=$PAUSE_MS \
  python3 "$TOP/tests/integration/holdrace.py" --lib "$LIBDEPFS_SO" --conf "$CONF" --path /f \
  --mnt-path "$MNT/f" --strips "$dirs" --pause-ms "$PAUSE_MS" 2> "$DEPFS_STATE/holdrace.err" ||
  { grep -E "WARN|ERR" "$DEPFS_STATE/holdrace.err" | tail -5; fail "an open handle lost its file to the purge (see above)"; }
grep -q "DEPFS_TEST_PAUSE reached: before_release" "$DEPFS_STATE/holdrace.err" || fail "the close never paused"
deadline=$((SECONDS + $(tscale "$PURGE_BOUND_S")))
until [ "$(strips_of "$ino")" -eq 0 ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "inode $ino's strip files stayed after its last close"
  sleep 0.5
done
log "inode $ino: strip files gone after the last close"
scrub_clean
echo "PASS: a reopen racing the last close's release kept the file held; the purge came after the last close"
