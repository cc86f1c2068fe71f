#!/usr/bin/env python3
"""stallio.py - the writer and reader of test_fault_stall.sh (issue 10's
reproduction), on the FUSE mount, timing every call.

  stallio.py write FILE REF --bytes B --chunk C --interval-ms T --fsync-every F
                  [--seed S] [--started PATH]
      B random bytes (kept in REF first), C bytes per write() with T ms of
      sleep between writes, fsync() after every F bytes and at the end, then
      close(). PATH is created when the first write is about to be issued
      (the test times its fault from it). Every call must succeed: exit 1
      with "FAILED: ..." on the first error. Prints one line per fsync and a
      summary: the slowest write() and fsync() and when they happened.
  stallio.py read FILE REF --stop PATH [--chunk C] [--seed S]
      until PATH exists: open FILE, pread C bytes at a random offset,
      close; each read must equal REF (exit 1 otherwise; errors are
      counted and reported, not fatal: the summary says what a reader saw).
      Prints the slowest call and the error count.
"""
import argparse, os, random, sys, time


def ms(t):
    return int(t * 1000)


def cmd_write(a):
    data = random.Random(a.seed).randbytes(a.bytes) if a.seed is not None else os.urandom(a.bytes)
    with open(a.ref, "wb") as f:
        f.write(data)
    fd = os.open(a.file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.monotonic()
    if a.started:
        open(a.started, "w").close()
    slow_w, slow_w_at, slow_f, slow_f_at, nwrites, nfsync = 0.0, 0.0, 0.0, 0.0, 0, 0
    off, since_sync = 0, 0
    while off < a.bytes:
        n = min(a.chunk, a.bytes - off)
        t = time.monotonic()
        try:
            got = os.pwrite(fd, data[off:off + n], off)
        except OSError as e:
            print(f"FAILED: write() of {n} bytes at {off} ({ms(t - t0)} ms in): {e} "
                  f"after {ms(time.monotonic() - t)} ms", flush=True)
            return 1
        d = time.monotonic() - t
        if got != n:
            print(f"FAILED: short write() {got} of {n} at {off}", flush=True)
            return 1
        nwrites += 1
        if d > slow_w:
            slow_w, slow_w_at = d, t - t0
        off += n
        since_sync += n
        if since_sync >= a.fsync_every or off == a.bytes:
            t = time.monotonic()
            try:
                os.fsync(fd)
            except OSError as e:
                print(f"FAILED: fsync() after {off} bytes ({ms(t - t0)} ms in): {e} "
                      f"after {ms(time.monotonic() - t)} ms", flush=True)
                return 1
            d = time.monotonic() - t
            nfsync += 1
            print(f"writer: fsync() after {off} bytes returned 0 in {ms(d)} ms ({ms(t - t0)} ms in)",
                  flush=True)
            if d > slow_f:
                slow_f, slow_f_at = d, t - t0
            since_sync = 0
        if off < a.bytes:
            time.sleep(a.interval_ms / 1000)
    t = time.monotonic()
    try:
        os.close(fd)
    except OSError as e:
        print(f"FAILED: close(): {e}", flush=True)
        return 1
    print(f"writer: {nwrites} writes, {nfsync} fsyncs, all returned 0 in {ms(time.monotonic() - t0)} ms; "
          f"slowest write() {ms(slow_w)} ms (at {ms(slow_w_at)} ms), slowest fsync() {ms(slow_f)} ms "
          f"(at {ms(slow_f_at)} ms), close() {ms(time.monotonic() - t)} ms", flush=True)
    return 0


def cmd_read(a):
    with open(a.ref, "rb") as f:
        want = f.read()
    r = random.Random(a.seed)
    t0 = time.monotonic()
    nread, errs, slow, slow_at, first_err = 0, 0, 0.0, 0.0, ""
    while not os.path.exists(a.stop):
        off = r.randrange(0, max(1, len(want) - a.chunk))
        t = time.monotonic()
        try:
            fd = os.open(a.file, os.O_RDONLY)
            try:
                got = os.pread(fd, a.chunk, off)
            finally:
                os.close(fd)
        except OSError as e:
            errs += 1
            first_err = first_err or f"{e} ({ms(t - t0)} ms in, after {ms(time.monotonic() - t)} ms)"
            time.sleep(0.05)
            continue
        d = time.monotonic() - t
        if d > slow:
            slow, slow_at = d, t - t0
        if got != want[off:off + a.chunk]:
            print(f"WRONG BYTES: reader got {len(got)} bytes at {off} that differ from the reference", flush=True)
            return 1
        nread += 1
        time.sleep(0.05)
    print(f"reader: {nread} reads right, {errs} errors{' (first: ' + first_err + ')' if errs else ''}; "
          f"slowest open+pread+close {ms(slow)} ms (at {ms(slow_at)} ms)", flush=True)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("file"); w.add_argument("ref")
    w.add_argument("--bytes", type=int, required=True)
    w.add_argument("--chunk", type=int, required=True)
    w.add_argument("--interval-ms", type=int, required=True)
    w.add_argument("--fsync-every", type=int, required=True)
    w.add_argument("--seed", type=int)
    w.add_argument("--started")
    r = sub.add_parser("read")
    r.add_argument("file"); r.add_argument("ref")
    r.add_argument("--stop", required=True)
    r.add_argument("--chunk", type=int, default=1 << 20)
    r.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    return cmd_write(a) if a.cmd == "write" else cmd_read(a)


if __name__ == "__main__":
    sys.exit(main())
