#!/usr/bin/env bash
# test_workload - a randomized workload of namespace operations and unaligned
# reads/writes in files of layouts 8@8, 8@7, 8@6, 8@4 and 4@2, run on the
# mount and on a local directory side by side and compared byte for byte;
# then the MDS and every I/O server are SIGKILLed and restarted, and
# everything is compared again. Scrub must be clean before and after.
source "$(dirname "$0")/lib.sh"
REF="$DEPFS_STATE-ref"
rm -rf "$REF"; mkdir -p "$REF"
cluster_up --servers 8

dirs=()
for spec in 8@8 8@7 8@6 8@4 4@2; do
  d="L${spec/@/_}"
  mkdir "$MNT/$d" "$REF/$d"
  setfattr -n user.depfs.layout -v "$spec" "$MNT/$d"
  got=$(getfattr --only-values -n user.depfs.layout "$MNT/$d")
  [[ "$got" == "$spec"* ]] || fail "layout xattr of $d reads '$got', want $spec"
  dirs+=("$d")
done
list=$(IFS=,; echo "${dirs[*]}")

log "workload (seed 11)"
python3 "$TOP/tests/integration/workload.py" run "$MNT" "$REF" --seed 11 --ops 1500 --dirs "$list" || fail "workload diverged"
python3 "$TOP/tests/integration/workload.py" verify "$MNT" "$REF" || fail "trees differ"

# files inherit their directory's layout
for spec in 8@8 8@7 8@6 8@4 4@2; do
  d="L${spec/@/_}"; echo probe > "$MNT/$d/probe"; echo probe > "$REF/$d/probe"
  n=${spec%@*}; k=${spec#*@}
  lay=$(file_layout "/$d/probe")
  [[ "$lay" == "$n@$k@"* ]] || fail "/$d/probe does not have layout $spec: $lay"
done
scrub_clean

log "SIGKILL the MDS and every I/O server, then restart them"
"$LC" kill mds
for i in 0 1 2 3 4 5 6 7; do "$LC" kill "$i"; done
"$LC" restart mds
for i in 0 1 2 3 4 5 6 7; do "$LC" restart "$i"; done
sleep 1
python3 "$TOP/tests/integration/workload.py" verify "$MNT" "$REF" || fail "trees differ after restart"
log "more workload after the restart (seed 12)"
python3 "$TOP/tests/integration/workload.py" run "$MNT" "$REF" --seed 12 --ops 500 --dirs "$list" || fail "workload diverged after restart"
python3 "$TOP/tests/integration/workload.py" verify "$MNT" "$REF" || fail "trees differ"
scrub_clean
rm -rf "$REF"
echo "PASS: workload agreed with the local reference before and after SIGKILL of every daemon; scrub clean"
