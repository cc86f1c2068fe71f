#!/usr/bin/env python3
"""holdrace.py - a file opened again while the last close of its earlier
handle in the same client is still giving the hold back (MDS_RELEASE):
the new handle must keep the file's strip files after an unlink. Drives
libdepfs (test build, DEPFS_TEST_PAUSE=before_release) in one process:

    holdrace.py --lib SO --conf C --path /P --mnt-path MNT/P --strips DIR,DIR... --pause-ms MS

  1. handle 1 of /P is closed; the releaser thread, which gives the hold
     back, stops before its MDS_RELEASE is sent (the inode is already
     dropped here);
  2. meanwhile handle 2 opens /P: its MDS_OPEN holds the file before the
     release arrives;
  3. the release goes; /P is unlinked through the mount (another client);
  4. the purger gets several passes; handle 2 must still read every byte.
Exit 0 when it does; 1 with "WRONG"/"FAILED" otherwise."""
import argparse, glob, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from depfs_ctypes import Depfs  # noqa: E402

PURGER_PASSES_S = 4.0  # the purger runs every second (REC_PURGE_IDLE_MS)
CHUNK = 1 << 20


def strips_left(dirs, ino):
    return sum(len(glob.glob(os.path.join(d, "%016x*" % ino))) for d in dirs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--conf", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--mnt-path", required=True)
    ap.add_argument("--strips", required=True)
    ap.add_argument("--pause-ms", type=int, required=True)
    a = ap.parse_args()
    dirs = a.strips.split(",")
    with open(a.mnt_path, "rb") as f:
        want = f.read()
    fs = Depfs(a.lib, a.conf)
    fh1 = fs.open(a.path)
    ino = fs.ino(fh1)
    fs.close(fh1)  # queues the release; the releaser stops before sending it
    time.sleep(min(a.pause_ms / 4000.0, 1.0))
    fh2 = fs.open(a.path)  # its hold arrives before the paused release
    time.sleep(a.pause_ms / 1000.0)  # the release has gone by now
    print(f"inode {ino}: reopened while the last close was releasing it; "
          f"{strips_left(dirs, ino)} strip files before the unlink", flush=True)
    os.unlink(a.mnt_path)
    time.sleep(PURGER_PASSES_S)
    left = strips_left(dirs, ino)
    got, off = [], 0
    while off < len(want):
        b = fs.pread(fh2, CHUNK, off)
        if not b:
            break
        got.append(b)
        off += len(b)
    got = b"".join(got)
    if got != want:
        bad = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
        print(f"WRONG: the open handle read {len(got)} bytes, first difference at {bad} "
              f"({left} strip files left after the purger's passes)")
        return 1
    print(f"open handle read all {len(want)} bytes; {left} strip files kept while it is open")
    fs.close(fh2)
    fs.unmount()
    return 0


if __name__ == "__main__":
    sys.exit(main())
