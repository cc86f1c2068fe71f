#!/usr/bin/env python3
"""serve_order.py - from a cluster's logs: the MDS never called a server
out of service while that server still served reads
(test_fault_stale_observation.sh).

    serve_order.py --logs DIR

Every change the MDS logged of an I/O server from up to rebuilding or
reconstructing must come after that server's own change out of UP (its
log: "server S: up -> ...", or its demotion after a stall) and before its
next return to UP. The other order leaves a window in which writers that
learnt the new state write around the server while readers that have not
learnt it read its stale units. Exit 0 when every change kept the order; 1 and a
"WRONG" line for every one that did not (every integration test checks it
at its end: lib.sh scrub_clean)."""
import argparse
import glob
import os
import re
import sys
from datetime import datetime

STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) "
MDS_CHANGE = re.compile(STAMP + r".*INFO ioserver (\d+) \([^)]*\): up -> (rebuilding|reconstructing),")
# an I/O server's log is its own: a state change it was told, or its own
# demotion (a stall, a lease not confirmed, a unit or intent it failed to
# store: each says "no reads until depfs-recovery rejoins", or "demoted in
# memory" when the store failed too)
OWN_OUT = re.compile(STAMP + r".*(?:: up -> (?:rebuilding|reconstructing)$"
                     r"|no reads until depfs-recovery rejoins|demoted in memory)")
OWN_UP = re.compile(STAMP + r".*: (?:rebuilding|reconstructing) -> up$")
# each start: the state it came up in
OWN_START = re.compile(STAMP + r".*INFO server \d+ listening on .*, state (\w+), epoch \d+$")


def stamp(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f")


def server_events(path):
    """(time, 'out'|'up') of one I/O server's log, in order."""
    ev = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = OWN_OUT.match(line)
            if m:
                ev.append((stamp(m.group(1)), "out"))
                continue
            m = OWN_UP.match(line)
            if m:
                ev.append((stamp(m.group(1)), "up"))
                continue
            m = OWN_START.match(line)
            if m:
                ev.append((stamp(m.group(1)), "up" if m.group(2) == "up" else "out"))
    return ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    a = ap.parse_args()
    changes = {}
    with open(os.path.join(a.logs, "mds.log"), errors="replace") as f:
        for line in f:
            m = MDS_CHANGE.match(line)
            if m:
                changes.setdefault(int(m.group(2)), []).append((stamp(m.group(1)), m.group(3)))
    bad = checked = 0
    for path in sorted(glob.glob(os.path.join(a.logs, "ioserver-*.log"))):
        sid = int(re.search(r"ioserver-(\d+)\.log$", path).group(1))
        ev = server_events(path)
        for t, state in changes.get(sid, []):
            checked += 1
            # the server's last own change at or before t (the same
            # millisecond counts: it answered before the MDS was asked)
            before = [e for e in ev if e[0] <= t]
            if before and before[-1][1] == "out":
                continue
            bad += 1
            last = f"to {before[-1][1]} at {before[-1][0]:%H:%M:%S.%f}" if before else "none"
            print(f"WRONG: the MDS called server {sid} {state} at {t:%H:%M:%S.%f} while it was "
                  f"still up and serving reads (its own last change before that: {last})")
    print(f"serve order: {checked} changes out of up at the MDS, {checked - bad} after the "
          f"server's own")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
