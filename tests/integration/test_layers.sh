#!/usr/bin/env bash
# test_layers - the call rules of client/lib (docs/ARCHITECTURE.md) hold in
# the built library: every file calls only its own layer or lower ones
# (recover_ > api_ > eng_ > io_ > core_), and no two files call each other
# (tests/tools/check_layers.py reads the objects with nm), and libdepfs.so
# exports exactly the functions of depfs.h and depfs_admin.h (nm -D). No
# cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
bin=${DEPFS_BIN_DIR:-$top/build/bin}
objdir="$(dirname "$bin")/obj/client/lib"
[ -d "$objdir" ] || { echo "FAIL: no objects in $objdir (build first)"; exit 1; }
if out=$(python3 "$top/tests/tools/check_layers.py" "$objdir"); then
  echo "$out"
  echo "ok: client/lib calls go one way only ($(tail -1 <<<"$out"))"
else
  echo "$out"
  echo "FAIL: client/lib breaks its call rules (see above)"
  exit 1
fi

# the exported surface: nm -D of the library against the public headers
so="$(dirname "$bin")/lib/libdepfs.so"
[ -f "$so" ] || { echo "FAIL: no $so"; exit 1; }
want=$(grep -hE '^[a-z].*\bdepfs_[a-z_0-9]+\(' "$top/client/lib/depfs.h" "$top/client/lib/depfs_admin.h" |
       sed -E 's/^[^(]*\b(depfs_[a-z_0-9]+)\(.*/\1/' | sort -u)
have=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TW]$/ {sub(/@.*/, "", $3); print $3}' | sort -u)
extra=$(comm -13 <(echo "$want") <(echo "$have"))
missing=$(comm -23 <(echo "$want") <(echo "$have"))
[ -z "$extra" ] || { echo "FAIL: libdepfs.so exports what no public header declares: $extra"; exit 1; }
[ -z "$missing" ] || { echo "FAIL: declared but not exported: $missing"; exit 1; }
echo "PASS: libdepfs.so exports the $(echo "$have" | wc -l) functions of depfs.h and depfs_admin.h and nothing else"
