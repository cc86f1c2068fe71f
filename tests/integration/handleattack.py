#!/usr/bin/env python3
"""handleattack.py - inode handles (mds/handles.h), by hand-built frames
from a MUNGE-proven user; used by test_handles.sh.

    handleattack.py attack MDS_ADDR MUNGE_SOCKET INOS_JSON
        run as user B. INOS_JSON maps names to inode numbers: "a" (/pub/a,
        user A's 0700 directory), "secret" (/pub/a/secret, 0644), "lnk"
        (/pub/a/lnk, a symlink), "sub" (/pub/a/sub, 0777), "subf"
        (/pub/a/sub/f, 0666), "lo" (/pub/lo, A's 0744 directory: B may list
        it, not search it), "lof" (/pub/lo/f), "pub" (/pub, 1777), "mine"
        (/pub/b/mine, B's own file) and "max" (the highest inode number in
        use). B may reach /pub/a by a walk from the root (it may search
        /pub), but nothing inside it.

Refused with EACCES, by guessed inode number (no tag, a forged tag, the tag
of another inode): GETATTR, OPEN, READLINK, READDIR, LINK (into /pub, whose
tag B has), LOOKUP and CREATE with a parent inside, SETATTR, EXTEND and
GETXATTR of a file inside; a GETATTR of every number from 2 to max (no
oracle either: missing inodes are refused alike). Allowed: B's own file and
directory, reached by LOOKUPs from the root, with the tags the replies
gave; a READDIR of /pub (B may search it) gives its entries' tags, which
work; a READDIR of /pub/lo (read, no search) lists the names without tags.
Each case prints "ok <case>: ..." or "FAIL <case>: ..."; exit 0 when every
case went as it should.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from authattack import EACCES, note, results  # noqa: E402
from authwire import f_bytes, f_int  # noqa: E402
from handles import (F_INO, F_NEW_PARENT, F_PARENT, MDS_GETATTR, MDS_LOOKUP,  # noqa: E402
                     MDS_READDIR, ROOT_INO, Handles, attr, entries)

MDS_SETATTR, MDS_CREATE, MDS_READLINK, MDS_LINK, MDS_GETXATTR, MDS_EXTEND, MDS_OPEN = \
    4, 5, 13, 14, 17, 20, 23
F_MODE, F_FLAGS, F_SET_MASK, F_XATTR_NAME, F_SIZE = 5, 11, 13, 20, 22
S_IFREG = 0o100000
O_RDONLY, O_RDWR = 0, 2
SET_MTIME_NOW = 256
FORGED_TAG = 0x5EC12E7DEADBEEF5
R_CAPABILITY, R_TARGET = 22, 6


def refused(case, ans):
    ok = ans is not None and ans[0] == EACCES
    note(ok, case, ("err %d %s" % ans[:2]) if ans else "connection closed")


def allowed(case, ans):
    ok = ans is not None and ans[0] == 0
    note(ok, case, "done" if ok else ("err %d %s" % ans[:2] if ans else "connection closed"))
    return ans[2] if ok else None


def guessed(h, ino, how):
    """ino's field as a user guessing it sends it: no tag, a forged one, or
    the tag of another inode (B's own file's)."""
    if how == "no tag":
        return f_int(F_INO, ino)
    return h.field(F_INO, ino, FORGED_TAG if how == "a forged tag" else h.tags[h.mine])


def refused_inside(h, inos):
    for how in ("no tag", "a forged tag", "its own file's tag"):
        refused("GETATTR of A's secret with %s" % how,
                h.call(MDS_GETATTR, guessed(h, inos["secret"], how)))
        refused("OPEN of A's secret for reading with %s" % how,
                h.call(MDS_OPEN, guessed(h, inos["secret"], how) + f_int(F_FLAGS, O_RDONLY)))
        refused("READLINK of A's symlink with %s" % how,
                h.call(MDS_READLINK, guessed(h, inos["lnk"], how)))
        refused("READDIR of A's 0777 subdirectory with %s" % how,
                h.call(MDS_READDIR, guessed(h, inos["sub"], how)))
    ans = h.call(MDS_OPEN, f_int(F_INO, inos["subf"]) + f_int(F_FLAGS, O_RDWR))
    refused("OPEN of A's 0666 file for writing by number", ans)
    note(ans is None or R_CAPABILITY not in ans[2], "no capability with the refusal", "")
    refused("LINK of A's secret into /pub (whose tag B has)",
            h.call(MDS_LINK, f_int(F_INO, inos["secret"]) + h.field(F_NEW_PARENT, inos["pub"]) +
                   f_bytes(10, "stolen")))
    refused("LOOKUP in A's 0777 subdirectory by number",
            h.call(MDS_LOOKUP, f_int(F_PARENT, inos["sub"]) + f_bytes(3, "f")))
    refused("LOOKUP in A's 0777 subdirectory with a forged tag",
            h.call(MDS_LOOKUP, h.field(F_PARENT, inos["sub"], FORGED_TAG) + f_bytes(3, "f")))
    refused("CREATE in A's 0777 subdirectory by number",
            h.call(MDS_CREATE, f_int(F_PARENT, inos["sub"]) + f_bytes(3, "planted") +
                   f_int(F_MODE, S_IFREG | 0o644)))
    refused("SETATTR (times) of A's 0666 file by number",
            h.call(MDS_SETATTR, f_int(F_INO, inos["subf"]) + f_int(F_SET_MASK, SET_MTIME_NOW)))
    refused("EXTEND of A's 0666 file by number",
            h.call(MDS_EXTEND, f_int(F_INO, inos["subf"]) + f_int(F_SIZE, 1 << 20)))
    refused("GETXATTR of A's 0666 file by number",
            h.call(MDS_GETXATTR, f_int(F_INO, inos["subf"]) + f_bytes(F_XATTR_NAME, "user.x")))
    bad = [ino for ino in range(ROOT_INO + 1, inos["max"] + 1)
           if (h.call(MDS_GETATTR, f_int(F_INO, ino)) or (None,))[0] != EACCES]
    note(not bad, "GETATTR of every inode number 2..%d without a tag" % inos["max"],
         "all refused" if not bad else "answered for %s" % bad)


def own_files(h, inos):
    refused("LOOKUP of secret in A's 0700 directory (its tag from a walk)",
            h.call(MDS_LOOKUP, h.field(F_PARENT, inos["a"]) + f_bytes(3, "secret")))
    rep = allowed("GETATTR of its own file with the tag its walk gave",
                  h.call(MDS_GETATTR, h.field(F_INO, h.mine)))
    note(rep is not None and attr(rep)["tag"] == h.tags[h.mine], "the reply carries that tag", "")
    allowed("OPEN of its own file", h.call(MDS_OPEN, h.field(F_INO, h.mine) +
                                           f_int(F_FLAGS, O_RDWR)))
    rep = allowed("READDIR of /pub (B may search it)",
                  h.call(MDS_READDIR, h.field(F_INO, inos["pub"])))
    ents = {e["name"]: e for e in entries(rep or {})}
    note(all(n in ents and ents[n]["tag"] is not None for n in ("a", "b")),
         "its entries carry their tags", str(sorted(ents)))
    if "b" in ents and ents["b"]["tag"] is not None:
        allowed("READDIR of its own directory with the tag READDIR gave",
                h.call(MDS_READDIR, h.field(F_INO, ents["b"]["ino"], ents["b"]["tag"])))
    rep = allowed("READDIR of /pub/lo (read, no search)",
                  h.call(MDS_READDIR, h.field(F_INO, inos["lo"])))
    ents = entries(rep or {})
    note(any(e["name"] == "f" for e in ents) and all(e["tag"] is None for e in ents),
         "its entries are listed without tags",
         str([(e["name"], e["tag"] is not None) for e in ents]))
    refused("GETATTR of /pub/lo/f by the number READDIR listed",
            h.call(MDS_GETATTR, f_int(F_INO, inos["lof"])))


def attack(mds, sock, inos):
    s = authwire.connect(mds, munge_socket=sock)
    h = Handles(s)
    h.mine = h.walk("/pub/b/mine")
    note(h.mine == inos["mine"], "a walk from the root to its own file", "inode %d" % h.mine)
    note(h.walk("/pub/a") == inos["a"], "a walk from the root to A's directory", "")
    own_files(h, inos)
    refused_inside(h, inos)
    s.close()


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "attack":
        with open(args[3]) as f:
            attack(args[1], args[2], json.load(f))
    else:
        print(__doc__)
        return 2
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
