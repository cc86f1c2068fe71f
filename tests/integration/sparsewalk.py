#!/usr/bin/env python3
"""sparsewalk.py - helpers of test_sparse.sh (issue 14): sparse files
written with pwrite and their SEEK_DATA/SEEK_HOLE walks.

  sparsewalk.py make PATH SIZE OFF:LEN ...  a file of SIZE bytes holding
                                            random bytes at each OFF:LEN
                                            (seeded by the offset), nothing
                                            else written
  sparsewalk.py walk PATH                   the data regions SEEK_DATA /
                                            SEEK_HOLE find, "start end" per
                                            line (bounded: 100000 regions)
  sparsewalk.py expect SU OFF:LEN ...       the regions the written ranges
                                            cover rounded out to units of
                                            SU and merged, same format
  sparsewalk.py covers PATH OFF:LEN ...     every written byte (sampled
                                            every 4 KiB and the last) is data
                                            and no hole starts inside a range
"""
import os
import random
import sys

WALK_MAX = 100000
SAMPLE = 4096


def ranges(args):
    return [tuple(int(x) for x in a.split(":")) for a in args]


def make(path, size, written):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size)
        for off, length in written:
            os.pwrite(fd, random.Random(off).randbytes(length), off)
    finally:
        os.close(fd)


def walk(path):
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size and len(out) < WALK_MAX:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == 6:  # ENXIO: no more data
                    break
                raise
            h = os.lseek(fd, d, os.SEEK_HOLE)
            assert h > d, f"SEEK_HOLE from data at {d} gave {h}"
            out.append((d, h))
            pos = h
    finally:
        os.close(fd)
    return out


def expect(su, written):
    out = []
    for off, length in sorted(written):
        a, b = off - off % su, -(-(off + length) // su) * su
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def covers(path, written):
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, length in written:
            samples = list(range(off, off + length, SAMPLE)) + [off + length - 1]
            for b in samples:
                d = os.lseek(fd, b, os.SEEK_DATA)
                if d != b:
                    sys.exit(f"written byte {b} is not data: SEEK_DATA from it gave {d}")
            h = os.lseek(fd, off, os.SEEK_HOLE)
            if h < off + length:
                sys.exit(f"a hole at {h} inside the written range {off}+{length}")
    finally:
        os.close(fd)


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], int(sys.argv[3]), ranges(sys.argv[4:]))
    elif cmd == "walk":
        for a, b in walk(sys.argv[2]):
            print(a, b)
    elif cmd == "expect":
        for a, b in expect(int(sys.argv[2]), ranges(sys.argv[3:])):
            print(a, b)
    elif cmd == "covers":
        covers(sys.argv[2], ranges(sys.argv[3:]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
