#!/usr/bin/env python3
"""degraded_race.py - a fast checking reader racing faultload.py race-writer,
for test_degraded_read_race.sh.

The writer rewrites [0, B) of a file over and over, each 8-byte word =
generation << 32 | word index, and keeps in READY.gen the newest generation
started. This reader reads random ranges (at most --max-bytes) for
--seconds and checks every word: its index must be right and its generation
at most the newest started. A decode mixing units from before and after a
write yields words that are neither.

  degraded_race.py lib   --lib SO --conf C --path /P --bytes B --seconds T --ready R
  degraded_race.py mount --file F           --bytes B --seconds T --ready R
  (both: [--max-bytes M] [--seed S])
mount: every read is a fresh open (no page cache carried over).
Exit 0 when every word was right; 1 with "WRONG BYTES ..." otherwise."""
import argparse, os, random, sys, time
from array import array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def check(got, w0, newest):
    """None when every word of got (read at word w0) is one a write put there."""
    halves = array("I", got)  # little-endian words: index, generation, ...
    if sys.byteorder != "little":
        halves.byteswap()
    idx, gen = halves[0::2], halves[1::2]
    if idx == array("I", range(w0, w0 + len(idx))) and max(gen) <= newest:
        return None
    for i, (x, g) in enumerate(zip(idx, gen)):
        if x != w0 + i or g > newest:
            return f"word at offset {(w0 + i) * 8} reads index {x} generation {g} " \
                   f"(want index {w0 + i}, generation <= {newest})"
    return "inconsistent check"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["lib", "mount"])
    ap.add_argument("--lib"); ap.add_argument("--conf"); ap.add_argument("--path")
    ap.add_argument("--file")
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    words = a.bytes // 8
    r = random.Random(a.seed)
    if a.mode == "lib":
        from depfs_ctypes import Depfs
        fs = Depfs(a.lib, a.conf)
        fh = fs.open(a.path, os.O_RDONLY)
        read = lambda n, off: fs.pread(fh, n, off)
    else:
        def read(n, off):
            fd = os.open(a.file, os.O_RDONLY)
            try:
                return os.pread(fd, n, off)
            finally:
                os.close(fd)
    reads = 0
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        w0 = r.randrange(0, words)
        nw = r.randrange(1, min(words - w0, a.max_bytes // 8) + 1)
        got = read(nw * 8, w0 * 8)
        with open(a.ready + ".gen") as f:
            newest = int(f.read())  # written before each generation starts
        if len(got) != nw * 8:
            print(f"FAILED: short read {len(got)} of {nw * 8} at {w0 * 8}", flush=True)
            return 1
        bad = check(got, w0, newest)
        if bad:
            print(f"WRONG BYTES ({a.mode}, read {reads + 1}): {bad}", flush=True)
            return 1
        reads += 1
    if a.mode == "lib":
        fs.close(fh)
        fs.unmount()
    print(f"degraded_race {a.mode}: {reads} reads, every word one that a write put there", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
