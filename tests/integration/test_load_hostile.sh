#!/usr/bin/env bash
# test_load_hostile - hostile peers cannot block other clients of a daemon or
# blow up its memory (README "Slow and hostile peers"). For ATTACK_S seconds
# hostile.py opens SOCKETS sockets to the MDS and as many to one I/O server
# (idle, half a frame header, or a header declaring 64 MiB followed by a
# little of it; the ones closed are reopened), and one client pipelines MDS
# SETATTRs without reading a reply. Meanwhile two well-behaved clients
# create and write files through the mount and copy files in with the CLI:
# each of their operations must complete within OP_MAX_S (p50/p99 are
# reported, not asserted), and the daemons' RSS must stay below RSS_MAX_MB.
# The daemons' logs must show the refusals rate-limited, and the
# pipeliner's connection closed for not reading its replies. The cluster
# runs with a short idle_timeout_ms: after the attack everything idles past
# it, the daemons close the clients' connections, and the mount must carry
# on transparently. Ends with the data read back exactly through the mount
# and the CLI, and a clean scrub.
source "$(dirname "$0")/lib.sh"
HOSTILE="$TOP/tests/integration/hostile.py"
ATTACK_S=20
SOCKETS=2000
OP_MAX_S=10
RSS_MAX_MB=300
SEND_TIMEOUT_MS=3000 # the pipeliner is cut off this long after its replies stop moving
IDLE_TIMEOUT_MS=3000 # connections silent this long are closed; clients reconnect
LOG_BURST=20         # RPC_LOG_BURST (common/rpc_server.c): lines a peer can trigger per second and kind
LOG_KINDS=3          # admission, frames, replies: one limit each
LOG_SLACK_S=5        # the log lines counted cover the attack and this much around it
SAMPLE_READS=10      # files also read back through a fresh CLI client

export DEPFS_CONF_EXTRA="send_timeout_ms = $SEND_TIMEOUT_MS
idle_timeout_ms = $IDLE_TIMEOUT_MS"
cluster_up --servers 4
W="$DEPFS_STATE/work"; mkdir -p "$W"
mds_addr=$(awk '$1 == "mds_address" {print $3}' "$CONF")
io_addr=$(awk '$1 == "ioserver" && $3 == 0 {print $4}' "$CONF")
mds_pid=$(cat "$DEPFS_STATE/pids/mds.pid")
io_pid=$(cat "$DEPFS_STATE/pids/ioserver-0.pid")

log "a target for the pipeliner's SETATTRs"
mkdir "$MNT/load"
echo target > "$MNT/load/target"
ino=$(depfs layout get --json /load/target | json_get ino) || fail "no inode number for /load/target"
warn_lines() { cat "$DEPFS_STATE/logs/mds.log" "$DEPFS_STATE/logs/ioserver-0.log" | grep -c ' WARN ' || true; }
warns_before=$(warn_lines)

log "$SOCKETS hostile sockets each to the MDS ($mds_addr) and I/O server 0 ($io_addr), a pipeliner, two clients, ${ATTACK_S} s"
t0=$SECONDS
timeout $((ATTACK_S + 3 * OP_MAX_S + 60)) python3 "$HOSTILE" --mds "$mds_addr" --io "$io_addr" \
  --ino "$ino" --mnt "$MNT" --depfs "$DEPFS_BIN_DIR/depfs --config $CONF" --work "$W" \
  --seconds "$ATTACK_S" --sockets "$SOCKETS" --watch "mds=$mds_pid" --watch "ioserver-0=$io_pid" \
  --rss-max-mb "$RSS_MAX_MB" --op-max-s "$OP_MAX_S" | tee "$W/report" ||
  fail "a well-behaved client was blocked or failed, or a daemon's memory grew past ${RSS_MAX_MB} MB"
elapsed=$((SECONDS - t0))

for name in mds ioserver-0; do
  kill -0 "$(cat "$DEPFS_STATE/pids/$name.pid")" || fail "$name died under the attack"
  grep -q "closing connection from .* to make room for" "$DEPFS_STATE/logs/$name.log" ||
    fail "$name logged no eviction of an unproven connection"
  grep -q "held back by the log rate limit" "$DEPFS_STATE/logs/$name.log" ||
    fail "$name's refusals were not rate-limited"
done
grep -qE "closing connection from .*: (a reply was not taken within send_timeout_ms|more replies queued)" \
  "$DEPFS_STATE/logs/mds.log" || fail "the MDS never closed the pipeliner, which reads no replies"
grep -qE "closed by the MDS [1-9]" "$W/report" || fail "the pipeliner was never cut off"
warns=$(( $(warn_lines) - warns_before ))
bound=$(( 2 * LOG_KINDS * (LOG_BURST + 1) * (elapsed + LOG_SLACK_S) ))
log "$warns warning lines in the MDS's and I/O server 0's logs over ${elapsed} s (bound $bound)"
[ "$warns" -le "$bound" ] || fail "$warns warning lines: the rate limit did not hold"

log "every file the clients wrote reads back exactly"
n=0
for f in "$W"/m/f* "$W"/c/f*; do
  [ -e "$f" ] || continue
  rel=${f#"$W"/}
  cmp "$f" "$MNT/load/$rel" || fail "/load/$rel reads back wrong through the mount"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "the clients wrote nothing"
i=0
for f in "$W"/c/f*; do
  [ "$i" -lt "$SAMPLE_READS" ] || break
  rel=${f#"$W"/}
  rm -f "$W/back"
  depfs cp "depfs:/load/$rel" "$W/back" && cmp "$f" "$W/back" || fail "/load/$rel reads back wrong through the CLI"
  i=$((i + 1))
done
log "$n files verified"

log "idle past idle_timeout_ms: the daemons close the mount's connections; it reconnects on its next call"
sleep $(( IDLE_TIMEOUT_MS / 1000 + 2 ))
echo after-idle > "$MNT/load/after-idle" || fail "create through the mount after an idle close"
[ "$(cat "$MNT/load/after-idle")" = after-idle ] || fail "read through the mount after an idle close"
cmp "$W/m/f00000" "$MNT/load/m/f00000" || fail "/load/m/f00000 reads back wrong after an idle close"
grep -q "connection to the MDS .* was closed, reconnecting" "$DEPFS_STATE/logs/fuse.log" ||
  fail "the mount never found its MDS connection closed by the idle timeout"
scrub_clean
echo "PASS: $SOCKETS hostile sockets per daemon and a client reading no replies: every client op completed within ${OP_MAX_S} s, RSS below ${RSS_MAX_MB} MB, data and parity intact"
