#!/usr/bin/env bash
# test_background_scrub - damage nobody reads is found and repaired by the
# I/O servers' background scrub and depfs-recovery (issue 12). On files of
# layouts 8@6 and 8@7, behind the servers' backs: bytes flipped in a data
# unit and in a parity unit of the 8@6 file and in a data unit of the 8@7
# file, and a third server's whole strip file of the 8@6 file deleted (its
# server restarted, so no cached descriptor hides the loss): never more
# than n-k bad units in a stripe. Then nothing reads: within
# REPAIR_BOUND_S every damaged strip file must be byte for byte what it was
# (the lost one recreated), `depfs status --json` must count the damage
# found and repaired and a finished pass per server; the files read back
# exactly, also decoded with n-k servers of the 8@6 file killed (so the
# repaired units are checked against the rest), and scrub is clean.
source "$(dirname "$0")/lib.sh"
require_recovery
REPAIR_BOUND_S=90
export DEPFS_CONF_EXTRA="scrub_rate = 64m" # the default is gentler; the test has little data
cluster_up --servers 8
REF="$DEPFS_STATE/ref"
mkdir -p "$REF"

scrub_total() { status_json | json_get "totals.scrub_blocks_$1" 2>/dev/null || echo 0; }

for L in 8@6 8@7; do
  d="/L${L/@/_}"
  mkdir "$MNT$d"; setfattr -n user.depfs.layout -v "$L" "$MNT$d"
  head -c $((6 * ${L#*@} * 65536)) /dev/urandom > "$REF/${L/@/_}"
  depfs cp "$REF/${L/@/_}" "depfs:$d/f" || fail "$L: copy in failed"
done

saved=()
plant() { # PATH STRIPE UNIT OFFSET-IN-UNIT
  local sid strip off
  read -r sid strip off < <(strip_of "$1" "$2" "$3")
  cp "$strip" "$DEPFS_STATE/saved.${#saved[@]}"
  saved+=("$strip")
  flip_byte "$strip" $((off + $4))
  log "flipped a byte of $1 stripe $2 unit $3 on server $sid"
}
plant /L8_6/f 1 0 777     # data, at position 1
plant /L8_6/f 3 7 4100    # parity (the unit's second block), at position 2
plant /L8_7/f 2 1 65000   # data, the unit's last block
read -r lost_sid lost_strip _ < <(strip_of /L8_6/f 0 5) # position 5
cp "$lost_strip" "$DEPFS_STATE/saved.lost"
rm "$lost_strip"
log "deleted server $lost_sid's strip file of /L8_6/f; restarting it"
restart_rejoined "$lost_sid" 60

t0=$(now_ms)
deadline=$((SECONDS + REPAIR_BOUND_S))
while :; do
  ok=1
  for i in "${!saved[@]}"; do cmp -s "${saved[$i]}" "$DEPFS_STATE/saved.$i" || ok=0; done
  cmp -s "$lost_strip" "$DEPFS_STATE/saved.lost" || ok=0
  [ "$ok" = 1 ] && [ "$(scrub_total repaired)" -ge 4 ] && break
  [ "$SECONDS" -lt "$deadline" ] ||
    fail "damage not repaired within ${REPAIR_BOUND_S} s (found $(scrub_total damaged), repaired $(scrub_total repaired)): $(grep -h 'background scrub' "$DEPFS_STATE"/logs/*.log | tail -3)"
  sleep 0.5
done
log "every damaged strip file is as it was $(( $(now_ms) - t0 )) ms later, without a read: found $(scrub_total damaged), repaired $(scrub_total repaired)"
grep -h "background scrub" "$DEPFS_STATE/logs/recovery.log" | tail -4
status_json > "$DEPFS_STATE/status.json"
python3 - "$DEPFS_STATE/status.json" <<'PY' || fail "depfs status --json does not show every server's scrub"
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["servers"]:
    sc = s["scrub"]
    assert sc["rate"] == 64 << 20, sc
    assert sc["passes"] >= 1 and sc["last_pass_end_s"], (s["id"], sc)
    assert sc["bytes_verified"] > 0, (s["id"], sc)
    assert sc["blocks_repaired"] <= sc["blocks_damaged"], (s["id"], sc)
PY
depfs status | grep -q "SCRUB_RATE" || fail "depfs status prints no background scrub table"

for L in 8@6 8@7; do
  cmp "$REF/${L/@/_}" "$MNT/L${L/@/_}/f" || fail "$L: the mount reads other bytes than were written"
done
read -r A B < <(depfs layout get --json /L8_6/f | json_get servers.3 servers.6)
log "servers $A and $B killed: the 8@6 file decodes through the repaired units"
kill_down "$A"; kill_down "$B"
depfs cp depfs:/L8_6/f "$DEPFS_STATE/back" && cmp "$REF/8_6" "$DEPFS_STATE/back" ||
  fail "8@6: decoding through the repaired units gives other bytes"
restart_rejoined "$A" 60
restart_rejoined "$B" 60
scrub_clean
echo "PASS: flipped bytes (data and parity units) and a lost strip file, never read, were found by the background scrub and repaired within ${REPAIR_BOUND_S} s; status counts them; reads exact, also decoded; scrub clean"
