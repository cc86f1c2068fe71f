#!/usr/bin/env python3
"""stalemark.py - a writer whose failure mark outlives the failure, and a
reader that never saw it (test_fault_stale_mark.sh).

    stalemark.py --lib SO --conf C --path /P --seconds T --started F

Two libdepfs clients in one process, each with its own status vector: the
writer overwrites /P (which must exist, a few stripes long) in 64 KiB
pieces, round after round, fsync after each; right after each fsync the
reader reads the piece back and it must be the bytes just acknowledged.
F is created when the first write is issued (the test stops a server from
then on). Exit 0 when every read was exact; 1 with "WRONG" on the first
stale piece."""
import argparse, os, random, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from depfs_ctypes import Depfs  # noqa: E402

PIECE = 65536


def main():
    ap = argparse.ArgumentParser()
    for o in ("--lib", "--conf", "--path", "--started"):
        ap.add_argument(o, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    a = ap.parse_args()
    w = Depfs(a.lib, a.conf)
    r = Depfs(a.lib, a.conf)
    wf = w.open(a.path, os.O_RDWR)
    size = len(r.read_file(a.path))
    pieces = size // PIECE
    if pieces < 2:
        sys.exit("FAILED: the file is too short")
    rng = random.Random(7)
    open(a.started, "w").close()
    end = time.monotonic() + a.seconds
    n = 0
    while time.monotonic() < end:
        i = n % pieces
        data = rng.randbytes(PIECE)
        w.pwrite(wf, data, i * PIECE)
        w.fsync(wf)
        rf = r.open(a.path)
        got = r.pread(rf, PIECE, i * PIECE)
        r.close(rf)
        if got != data:
            bad = sum(1 for x, y in zip(got, data) if x != y)
            print(f"WRONG: piece {i} (offset {i * PIECE}) read back {bad} stale bytes right "
                  f"after its fsync returned (write {n}, {a.seconds - (end - time.monotonic()):.1f} s in)",
                  flush=True)
            return 1
        n += 1
    print(f"stalemark: {n} writes, each read back exact right after its fsync", flush=True)
    w.close(wf)
    r.unmount()
    w.unmount()
    return 0


if __name__ == "__main__":
    sys.exit(main())
