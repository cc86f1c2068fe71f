#!/usr/bin/env bash
# test_layers - the call rules of client/lib (docs/ARCHITECTURE.md) hold in
# the built library: every file calls only its own layer or lower ones
# (recover_ > api_ > eng_ > io_ > core_), and no two files call each other
# (tests/tools/check_layers.py reads the objects with nm). No cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=${DEPFS_BIN_DIR:-$top/build/bin}
objdir="$(dirname "$bin")/obj/client/lib"
[ -d "$objdir" ] || { echo "FAIL: no objects in $objdir (build first)"; exit 1; }
if out=$(python3 "$top/tests/tools/check_layers.py" "$objdir"); then
  echo "$out"
  echo "PASS: client/lib calls go one way only ($(tail -1 <<<"$out"))"
else
  echo "$out"
  echo "FAIL: client/lib breaks its call rules (see above)"
  exit 1
fi
