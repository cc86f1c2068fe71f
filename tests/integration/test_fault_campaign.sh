#!/usr/bin/env bash
# test_fault_campaign - the short form of the randomized fault campaign
# (tests/integration/campaign.py, issue 10): a few rounds, each a fresh
# 8-server cluster with two FUSE mounts and libdepfs clients writing,
# overwriting shared stripes, truncating, renaming and fsyncing while I/O
# servers are frozen (short and across the detection timeout), killed and
# restarted, cut off in a network namespace or out of space, and the MDS,
# the recovery daemon and a client are killed. After each round every
# fsync-acknowledged byte must read back exactly (healthy and with n-k
# servers down), scrub must be clean, no lock held, every server up, every
# daemon alive with a clean log. `make soak ROUNDS=N SEED=S` runs it longer.
# The seed is the date (one schedule per day) unless DEPFS_CAMPAIGN_SEED is
# set; a failure names it, and the same seed replays the same schedule.
# No MPI-IO client here (CI runs this before test_mpiio builds MPICH, and
# the test is the same everywhere); DEPFS_CAMPAIGN_MPIIO=1 adds it when
# MPICH with the driver is built (make soak has it then).
source "$(dirname "$0")/lib.sh"
require_recovery
[ "$DEPFS_VALGRIND" != 1 ] || { echo "SKIP: the campaign's fault timing is not meant for valgrind (test_valgrind covers the daemons)"; exit 77; }
SEED=${DEPFS_CAMPAIGN_SEED:-$(date +%Y%m%d)}
ROUNDS=${DEPFS_CAMPAIGN_ROUNDS:-2}
ROUND_S=${DEPFS_CAMPAIGN_ROUND_SECONDS:-20}
MAX_MIN=${DEPFS_CAMPAIGN_MAX_MINUTES:-3}
mkdir -p "$DEPFS_STATE"
out="$DEPFS_STATE-campaign.out"
log "fault campaign: seed $SEED, $ROUNDS rounds of ${ROUND_S}s (stops starting rounds after ${MAX_MIN} min)"
rc=0
python3 "$TOP/tests/integration/campaign.py" --seed "$SEED" --rounds "$ROUNDS" --round-seconds "$ROUND_S" \
  --max-minutes "$MAX_MIN" --state "$DEPFS_STATE" --base-port "$DEPFS_BASE_PORT" --bin-dir "$DEPFS_BIN_DIR" \
  $([ "${DEPFS_CAMPAIGN_MPIIO:-0}" = 1 ] || echo --mpich-lib none) 2>&1 | tee "$out" || rc=$?
summary=$(grep -E '^seed [0-9]+: [0-9]+ rounds' "$out" | tail -1 || true)
bytes=$(grep -E '^bytes verified' "$out" | tail -1 || true)
first=$(grep -E '^(LOST|WRONG|SIZE|MISSING|UNDEAD|ERROR|FAILED):' "$out" | head -1 || true)
rm -f "$out"
[ "$rc" -eq 0 ] || fail "${first:-campaign exited with status $rc} (replay: DEPFS_CAMPAIGN_SEED=$SEED)"
[ -n "$summary" ] || fail "the campaign printed no summary (seed $SEED)"
echo "PASS: fault campaign $summary; $bytes"
