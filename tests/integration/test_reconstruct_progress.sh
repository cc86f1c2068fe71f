#!/usr/bin/env bash
# test_reconstruct_progress - `depfs reconstruct` publishes its progress to
# the MDS, so `depfs status` from another shell shows it. I/O server S is
# SIGKILLed, its data directory wiped and the server started again with
# --reconstruct; a rate-limited `depfs reconstruct S --rate R` runs in the
# background while this script polls `depfs status --json` (a separate
# process: only what the MDS holds can reach it) until it sees S as
# reconstructing with 0 < rebuild_done_bytes < rebuild_total_bytes and a
# rate, and the text status shows percent, MB/s and ETA. A first run is
# interrupted (SIGTERM): its bytes stay, but with no reports coming the MDS
# soon shows no rate or ETA. The second run resumes; when it ends: S is up for the server and the MDS, its progress is
# cleared, every file reads back unchanged and scrub is clean.
source "$(dirname "$0")/lib.sh"
require_recovery
SEED=${DEPFS_FAULT_SEED:-$(( $(date +%s) % 30000 ))}
RANDOM=$SEED
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
RATE_MBPS=${DEPFS_RECONSTRUCT_RATE:-2}  # MB/s: the run lasts several seconds
BIG_MIB=48                              # 8@6: S holds 8 MiB of it, ~4 s at 2 MB/s
POLL_S=0.3
PROGRESS_WAIT_S=60
FINISH_WAIT_S=300
RATE_STALE_WAIT_S=7                     # > the MDS's MDS_RATE_STALE_MS (5 s)

# start_reconstructing ID: the server's command line (local-cluster's cmd
# file) plus --reconstruct, started the way local-cluster starts daemons so
# its pid file, kill and restart keep working.
start_reconstructing() {
  local id=$1 name="ioserver-$1" a port
  local -a cmd args=()
  eval "cmd=($(cat "$DEPFS_STATE/pids/$name.cmd"))"
  for a in "${cmd[@]}"; do [ "$a" = --rebuild ] || [ "$a" = --reconstruct ] || args+=("$a"); done
  args+=(--reconstruct)
  rm -f "$DEPFS_STATE/pids/$name.pid"
  echo "=== $(date '+%F %T') starting: ${args[*]}" >>"$DEPFS_STATE/logs/$name.log"
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$DEPFS_STATE/pids/$name.pid" "${args[@]}" \
    </dev/null >>"$DEPFS_STATE/logs/$name.log" 2>&1 &
  port=$(awk -v id="$id" '$1 == "ioserver" && $3 == id {print $4}' "$CONF" | cut -d: -f2)
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.1; done
  fail "$name (--reconstruct) not listening on port $port"
}

# progress_of ID: "STATE MDS_STATE DONE TOTAL RATE ETA" from depfs status --json.
progress_of() {
  status_json 2>/dev/null |
    json_get "servers.id=$1."{state,mds_state,rebuild_done_bytes,rebuild_total_bytes,rebuild_rate_bps,rebuild_eta_s} \
      2>/dev/null || echo "? ? 0 0 0 null"
}

log "seed $SEED"
cluster_up --servers 8
for spec in 8@6 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
done
python3 "$FAULTLOAD" populate "$MNT" "$REF" --dirs L8_6,L4_2 --files 4 --seed "$SEED" || fail "populate failed"
head -c $((BIG_MIB * 1024 * 1024 + 777)) /dev/urandom >"$REF/L8_6/big"
cp "$REF/L8_6/big" "$MNT/L8_6/big"
verify_all "$REF"

S=$((RANDOM % 8))
log "server $S: SIGKILL, wipe, restart with --reconstruct, depfs reconstruct --rate $RATE_MBPS in the background"
kill_down "$S"
rm -rf "$(io_dir "$S")"; mkdir -p "$(io_dir "$S")"
start_reconstructing "$S"
# wait_progress: poll depfs status --json until server $S shows 0 < done <
# total with a rate and ETA (reconstructing for itself and the MDS), and the
# text status shows percent, bytes, MB/s and ETA; sets done/total/rate/eta.
wait_progress() {
  local seen="" t0=$SECONDS text
  while :; do
    read -r st mst done total rate eta <<<"$(progress_of "$S")"
    if [ "$total" -gt 0 ] && [ "$done" -gt 0 ] && [ "$done" -lt "$total" ]; then
      [ -n "$seen" ] || seen="state=$st mds_state=$mst done=$done total=$total rate=$rate eta=$eta"
      [ "$mst" = reconstructing ] || fail "server $S is $mst for the MDS during its reconstruction (done $done of $total)"
      [ "$st" = reconstructing ] || fail "server $S says $st during its reconstruction"
      if [ "$rate" -gt 0 ] && [ "$eta" != null ]; then
        text=$(depfs status | awk -v id="$S" '$1 == id')
        echo "$text" | grep -Eq '[0-9]+% [0-9.]+[BKMG]?/[0-9.]+[BKMG] [0-9.]+ MB/s ETA [0-9]+:[0-9]{2}' ||
          fail "depfs status does not show percent, bytes, MB/s and ETA for server $S: $text"
        log "depfs status: $text"
        log "depfs status --json: first seen $seen; with rate: done=$done total=$total rate=$rate B/s eta=${eta}s"
        return 0
      fi
    fi
    kill -0 "$rp" 2>/dev/null || { wait "$rp" || true; tr '\r' '\n' <"$DEPFS_STATE/recon.out" | tail -3
      fail "depfs reconstruct ended before depfs status showed its progress with a rate (first seen: ${seen:-nothing})"; }
    [ $((SECONDS - t0)) -lt "$(tscale "$PROGRESS_WAIT_S")" ] || fail "no progress of server $S in depfs status --json after ${PROGRESS_WAIT_S}s (last: $st $mst $done/$total)"
    sleep "$POLL_S"
  done
}

# ---- 1. a run interrupted (SIGTERM) after it showed progress: the MDS
# keeps its bytes but stops claiming a rate (no ETA) once reports stop
"$DEPFS_BIN_DIR/depfs" --config "$CONF" reconstruct "$S" --rate "$RATE_MBPS" >"$DEPFS_STATE/recon.out" 2>&1 &
rp=$!
wait_progress
kill -TERM "$rp"; wait "$rp" || true
sleep "$RATE_STALE_WAIT_S"
read -r st mst done total rate eta <<<"$(progress_of "$S")"
log "${RATE_STALE_WAIT_S}s after the interruption: state=$st mds_state=$mst done=$done total=$total rate=$rate eta=$eta"
[ "$mst" = reconstructing ] || fail "server $S is $mst for the MDS after an interrupted reconstruction"
[ "$done" -gt 0 ] && [ "$rate" -eq 0 ] && [ "$eta" = null ] ||
  fail "after the interruption server $S shows done=$done rate=$rate eta=$eta (want the bytes kept, no rate, no ETA)"

# ---- 2. the resumed run, to the end
log "depfs reconstruct $S --rate $RATE_MBPS again (resumes)"
"$DEPFS_BIN_DIR/depfs" --config "$CONF" reconstruct "$S" --rate "$RATE_MBPS" >"$DEPFS_STATE/recon.out" 2>&1 &
rp=$!
wait_progress
# it moves: a later sample shows more bytes done
first_done=$done
t0=$SECONDS
while kill -0 "$rp" 2>/dev/null; do
  read -r st mst done total rate eta <<<"$(progress_of "$S")"
  [ "$done" -le "$first_done" ] || break
  [ $((SECONDS - t0)) -lt "$(tscale 30)" ] || fail "progress of server $S stuck at $first_done bytes"
  sleep "$POLL_S"
done
log "later sample: done=$done of $total (mds_state $mst)"

# ---- the end: up, progress cleared, contents and parity right
t0=$SECONDS
while kill -0 "$rp" 2>/dev/null; do
  [ $((SECONDS - t0)) -lt "$(tscale "$FINISH_WAIT_S")" ] || { kill -TERM "$rp"; fail "depfs reconstruct $S did not finish"; }
  sleep 0.5
done
wait "$rp" || { tr '\r' '\n' <"$DEPFS_STATE/recon.out" | tail -5; fail "depfs reconstruct $S failed"; }
tr '\r' '\n' <"$DEPFS_STATE/recon.out" | tail -2
read -r st mst done total rate eta <<<"$(progress_of "$S")"
[ "$st" = up ] && [ "$mst" = up ] || fail "server $S is '$st' (MDS '$mst') after depfs reconstruct finished"
[ "$done" -eq 0 ] && [ "$total" -eq 0 ] && [ "$rate" -eq 0 ] ||
  fail "server $S still shows rebuild progress $done/$total at $rate B/s after it is up"
log "server $S is up for itself and the MDS; its progress is cleared"
wait_all_up 60
settle_clients
verify_all "$REF"
scrub_clean
rm -rf "$REF"
echo "PASS: depfs status showed server $S's reconstruction (reconstructing, bytes, rate, ETA) from another process, then up with progress cleared; contents unchanged; scrub clean (seed $SEED)"
