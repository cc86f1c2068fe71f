#!/usr/bin/env python3
"""rawlock.py - takes a stripe lock on one I/O server with a hand-built
IO_LOCK request (the frame helpers of badwire.py), as a client would on the
pre-read of a write, and then goes away without unlocking: the lock is an
orphan once it is older than lock_lease_ms.

    rawlock.py HOST:PORT FILE_ID FIRST_STRIPE COUNT OWNER_CLIENT OWNER_OP

Prints the server's answer; exit 0 when the lock was granted (err 0), 1
otherwise."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from badwire import IO_LOCK, call, f_int, lock  # noqa: E402


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    addr = sys.argv[1]
    file_id, first, count, owner, op = (int(x) for x in sys.argv[2:])
    err, msg = call(addr, IO_LOCK, f_int(1, file_id) + lock(first, count, owner=owner, op=op))
    print(f"IO_LOCK file {file_id} stripes [{first},{first + count}) owner client {owner} op {op} "
          f"at {addr}: err {err}{' (' + msg + ')' if msg else ''}", flush=True)
    return 0 if err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
