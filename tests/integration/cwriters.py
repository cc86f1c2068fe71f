#!/usr/bin/env python3
"""cwriters.py - concurrent writers of one shared file, for
test_concurrent_writers.sh and bench-locking.

Every byte of the file has exactly one owner (a writer). What writer w
writes in round r at file offset x is pattern(w, r)[x % PERIOD], a
pseudo-random block per (writer, round) whose period is prime, so no two
writers, rounds or positions look alike and nothing lines up with pages or
stripe units. After the writers finish, every byte must equal
pattern(owner, last round)[x % PERIOD].

Modes (how bytes are owned):
  stride  piece i = [i*piece, (i+1)*piece) belongs to writer i % W (the
          issue's 1000-byte pieces at a stride: never page or unit aligned)
  slices  every stripe is cut into W slices at odd offsets; writer w owns
          slice w of every stripe and writes it in chunks of `piece` bytes

  cwriters.py write  FILE --mode M --writer w --writers W --rounds R --size S
                     [--piece P] [--stripe B] [--fsync] [--direct] [--fsync-every N]
  --direct: O_DIRECT (the client writes every piece through at once: the
  stripe-lock protocol per piece); --fsync-every N: buffered (write-behind
  batches pieces into multi-stripe rounds), fsync after every N pieces.
  cwriters.py verify FILE [FILE...] --mode M --writers W --rounds R --size S
                     [--piece P] [--stripe B]
"""
import argparse
import os
import random
import sys
import time

PERIOD = 65521  # prime


def pattern(w, r):
    rng = random.Random(1000003 * (w + 1) + r)
    block = rng.randbytes(PERIOD)
    return block + block  # any [x % PERIOD, +len) slice with len <= PERIOD


def expected_bytes(pat, off, length):
    out = bytearray()
    while length > 0:
        a = off % PERIOD
        n = min(length, PERIOD)
        out += pat[a:a + n]
        off += n
        length -= n
    return bytes(out)


def slice_bounds(stripe, writers):
    """Slice starts inside a stripe: near stripe*w/W, moved to odd offsets."""
    b = [0]
    for w in range(1, writers):
        b.append(stripe * w // writers + 777 * w + 1)
    b.append(stripe)
    return b


def pieces(mode, w, writers, size, piece, stripe):
    """(offset, length) of every piece writer w owns, in file order."""
    if mode == "stride":
        i = w
        while i * piece < size:
            yield i * piece, min(piece, size - i * piece)
            i += writers
        return
    bounds = slice_bounds(stripe, writers)
    for s0 in range(0, size, stripe):
        a, b = s0 + bounds[w], min(s0 + bounds[w + 1], size)
        while a < b:
            n = min(piece, b - a)
            yield a, n
            a += n


def owner_runs(mode, writers, size, piece, stripe):
    """(offset, length, owner) covering the file."""
    if mode == "stride":
        for i in range(0, (size + piece - 1) // piece):
            yield i * piece, min(piece, size - i * piece), i % writers
        return
    bounds = slice_bounds(stripe, writers)
    for s0 in range(0, size, stripe):
        for w in range(writers):
            a, b = s0 + bounds[w], min(s0 + bounds[w + 1], size)
            if a < b:
                yield a, b - a, w


def do_write(a):
    fd = os.open(a.files[0], os.O_WRONLY | (os.O_DIRECT if a.direct else 0))
    n = 0
    pieces_done = 0
    t0 = time.monotonic()
    try:
        for r in range(a.rounds):
            pat = pattern(a.writer, r)
            for off, length in pieces(a.mode, a.writer, a.writers, a.size, a.piece, a.stripe):
                data = expected_bytes(pat, off, length)
                if os.pwrite(fd, data, off) != length:
                    print(f"writer {a.writer}: short write at {off}", file=sys.stderr)
                    return 1
                n += length
                pieces_done += 1
                if a.fsync_every and pieces_done % a.fsync_every == 0:
                    os.fsync(fd)
        if a.fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    dt = time.monotonic() - t0
    print(f"writer {a.writer}: {n} bytes in {dt:.2f} s")
    return 0


def do_verify(a):
    bad = 0
    for path in a.files:
        with open(path, "rb") as f:
            data = f.read()
        if len(data) != a.size:
            print(f"{path}: size {len(data)} != {a.size}")
            bad += 1
            continue
        pats = [pattern(w, a.rounds - 1) for w in range(a.writers)]
        wrong = 0
        for off, length, w in owner_runs(a.mode, a.writers, a.size, a.piece, a.stripe):
            if data[off:off + length] != expected_bytes(pats[w], off, length):
                if wrong < 5:
                    print(f"{path}: bytes [{off}, +{length}) of writer {w} are wrong")
                wrong += 1
        if wrong:
            print(f"{path}: {wrong} pieces wrong")
            bad += 1
        else:
            print(f"{path}: every byte is its writer's ({a.size} bytes)")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["write", "verify"])
    p.add_argument("files", nargs="+")
    p.add_argument("--mode", choices=["stride", "slices"], required=True)
    p.add_argument("--writer", type=int, default=0)
    p.add_argument("--writers", type=int, required=True)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--piece", type=int, default=1000)
    p.add_argument("--stripe", type=int, default=6 * 65536)
    p.add_argument("--fsync", action="store_true")
    p.add_argument("--direct", action="store_true")
    p.add_argument("--fsync-every", type=int, default=0)
    a = p.parse_args()
    assert 0 < a.piece <= PERIOD and 0 <= a.writer < a.writers
    return do_write(a) if a.cmd == "write" else do_verify(a)


if __name__ == "__main__":
    sys.exit(main())
