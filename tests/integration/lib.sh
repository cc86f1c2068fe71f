# lib.sh - shared helpers for integration tests (sourced). Each test runs its
# own cluster through deploy/local-cluster, the way users start one.
set -euo pipefail
TOP=${DEPFS_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export DEPFS_BIN_DIR=${DEPFS_BIN_DIR:-$TOP/build/bin}
export DEPFS_STATE=${DEPFS_STATE:-/tmp/depfs-it-$$}
export DEPFS_BASE_PORT=${DEPFS_BASE_PORT:-7600}
LC="$TOP/deploy/local-cluster"
CONF="$DEPFS_STATE/depfs.conf"
MNT="$DEPFS_STATE/mnt"

log() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }
depfs() { "$DEPFS_BIN_DIR/depfs" --config "$CONF" "$@"; }

cluster_up() {
  "$LC" down >/dev/null 2>&1 || true
  rm -rf "$DEPFS_STATE"
  "$LC" up "$@" || { tail -n 30 "$DEPFS_STATE"/logs/*.log 2>/dev/null; fail "cluster did not start"; }
  mountpoint -q "$MNT" || fail "not mounted at $MNT"
}
cluster_down() { "$LC" down >/dev/null 2>&1 || true; }
on_exit() {
  local rc=$?
  if [ $rc -ne 0 ] && [ -d "$DEPFS_STATE/logs" ]; then
    for f in "$DEPFS_STATE"/logs/*.log; do echo "---- $f"; tail -n 15 "$f"; done
  fi
  cluster_down
  [ $rc -eq 0 ] && rm -rf "$DEPFS_STATE"
  exit $rc
}
trap on_exit EXIT

# Every integration test ends here: parity consistent everywhere.
scrub_clean() {
  log "scrub --all"
  depfs scrub --all || fail "scrub found inconsistent or unreadable stripes"
}
