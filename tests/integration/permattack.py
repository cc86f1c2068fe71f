#!/usr/bin/env python3
"""permattack.py - POSIX permissions at the MDS (issue 13), by hand-built
frames from a MUNGE-proven user; used by test_permissions.sh.

    permattack.py attack MDS_ADDR MUNGE_SOCKET INOS
        run as an unprivileged user: every request claims uid 0, gid 0 and
        group 0 (which the MDS must ignore) and tries what only root or an
        owner may: chmod 04777 / chown to 0 of root's file, unlink it,
        rename over it, unlink root's file in a sticky directory, set the
        layout of root's directory, list a 0700 directory, create in a 0755
        root directory, chown its own file to root, open root's 0600 file.
        Then, as the owner, a chmod of its own file (allowed).
    permattack.py actfor MDS_ADDR MUNGE_SOCKET INOS UID GID
        run as root (by MUNGE, on a client node): a create in the sticky
        directory claiming UID/GID is made for them (depfs-fuse acting for
        a kernel request's caller); claiming uid 0 it is squashed and may
        not create in the root directory.

INOS is "root_file,root_dir,sticky_dir,sticky_root_file,private_dir,own_file"
(inode numbers; own_file is in sticky_dir, named "mine"; sticky_root_file is
named "rootfile"; root_file is "/secret"). Each case prints "ok <case>: ..."
or "FAIL <case>: ..."; exit 0 when every case went as it should.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from authattack import EACCES, EPERM, note, refused, results, roundtrip  # noqa: E402
from authwire import f_bytes, f_int  # noqa: E402

(MDS_CREATE, MDS_SETATTR, MDS_UNLINK, MDS_RENAME, MDS_READDIR, MDS_SETXATTR,
 MDS_OPEN) = 5, 4, 8, 10, 11, 16, 23
F_PARENT, F_NAME, F_INO, F_MODE, F_UID, F_GID = 2, 3, 4, 5, 6, 7
F_NEW_PARENT, F_NEW_NAME, F_FLAGS, F_SET_MASK, F_ATTR = 9, 10, 11, 13, 14
F_XATTR_NAME, F_XATTR_VALUE, F_GROUPS, F_RENEW_HOLD = 20, 21, 26, 35
SET_MODE, SET_UID = 1, 2
S_IFREG = 0o100000
O_RDONLY = 0


def claim(uid=0, gid=0):
    """What a request says about its caller (ignored for a plain user)."""
    return f_int(F_UID, uid) + f_int(F_GID, gid) + f_int(F_GROUPS, gid)


def attr(ino, mode=0, uid=0, gid=0):
    """An Attr with every required field (only those the mask names count)."""
    body = (f_int(1, ino) + f_int(2, mode) + f_int(3, 1) + f_int(4, uid) + f_int(5, gid) +
            f_int(6, 0) + f_int(7, 0) + f_int(8, 0) + f_int(9, 0) + f_int(10, 0))
    return f_bytes(F_ATTR, body)


def allowed(case, answer):
    ok = answer is not None and answer[0] == 0
    note(ok, case, "done" if ok else ("err %s %s" % answer if answer else "connection closed"))


def attack(mds, sock, inos):
    root_file, root_dir, sticky, sticky_root, private, mine = inos
    s = authwire.connect(mds, munge_socket=sock)
    refused("SETATTR mode 04777 of root's file",
            roundtrip(s, MDS_SETATTR, claim() + f_int(F_INO, root_file) +
                      f_int(F_SET_MASK, SET_MODE) + attr(root_file, mode=0o4777)), (EPERM,))
    refused("SETATTR uid 0 -> 0 of root's file (not the owner)",
            roundtrip(s, MDS_SETATTR, claim() + f_int(F_INO, root_file) +
                      f_int(F_SET_MASK, SET_UID) + attr(root_file, uid=0)), (EPERM,))
    refused("UNLINK of root's /secret",
            roundtrip(s, MDS_UNLINK, claim() + f_int(F_PARENT, root_dir) +
                      f_bytes(F_NAME, "secret")), (EACCES,))
    refused("RENAME of its file over root's /secret",
            roundtrip(s, MDS_RENAME, claim() + f_int(F_PARENT, sticky) + f_bytes(F_NAME, "mine") +
                      f_int(F_NEW_PARENT, root_dir) + f_bytes(F_NEW_NAME, "secret")), (EACCES,))
    refused("RENAME of its file over root's file in a sticky dir",
            roundtrip(s, MDS_RENAME, claim() + f_int(F_PARENT, sticky) + f_bytes(F_NAME, "mine") +
                      f_int(F_NEW_PARENT, sticky) + f_bytes(F_NEW_NAME, "rootfile")), (EPERM,))
    refused("UNLINK of root's file in a sticky dir",
            roundtrip(s, MDS_UNLINK, claim() + f_int(F_PARENT, sticky) +
                      f_bytes(F_NAME, "rootfile")), (EPERM,))
    refused("SETXATTR of the layout of root's directory",
            roundtrip(s, MDS_SETXATTR, claim() + f_int(F_INO, root_dir) +
                      f_bytes(F_XATTR_NAME, "user.depfs.layout") + f_bytes(F_XATTR_VALUE, "2@1")),
            (EPERM,))
    refused("READDIR of a 0700 directory",
            roundtrip(s, MDS_READDIR, claim() + f_int(F_INO, private)), (EACCES,))
    refused("CREATE in the 0755 root directory",
            roundtrip(s, MDS_CREATE, claim() + f_int(F_PARENT, root_dir) + f_bytes(F_NAME, "evil") +
                      f_int(F_MODE, S_IFREG | 0o644)), (EACCES,))
    refused("SETATTR uid 0 of its own file (chown to root)",
            roundtrip(s, MDS_SETATTR, claim() + f_int(F_INO, mine) +
                      f_int(F_SET_MASK, SET_UID) + attr(mine, uid=0)), (EPERM,))
    refused("OPEN of root's 0600 file for reading",
            roundtrip(s, MDS_OPEN, claim() + f_int(F_INO, root_file) + f_int(F_FLAGS, O_RDONLY)),
            (EACCES,))
    refused("OPEN renew_hold of root's 0600 file (a hold without a permission check: the "
            "cluster key's holders only)",
            roundtrip(s, MDS_OPEN, claim() + f_int(F_INO, root_file) + f_int(F_FLAGS, O_RDONLY) +
                      f_int(F_RENEW_HOLD, 1)), (EPERM,))
    allowed("SETATTR mode 0640 of its own file (the owner)",
            roundtrip(s, MDS_SETATTR, claim() + f_int(F_INO, mine) +
                      f_int(F_SET_MASK, SET_MODE) + attr(mine, mode=0o640)))
    s.close()


def actfor(mds, sock, inos, uid, gid):
    _root_file, root_dir, sticky, _sr, _private, _mine = inos
    s = authwire.connect(mds, munge_socket=sock)
    allowed("CREATE in the sticky dir for uid %d" % uid,
            roundtrip(s, MDS_CREATE, claim(uid, gid) + f_int(F_PARENT, sticky) +
                      f_bytes(F_NAME, "actfor") + f_int(F_MODE, S_IFREG | 0o644)))
    refused("CREATE in the root dir by squashed root",
            roundtrip(s, MDS_CREATE, claim(0, 0) + f_int(F_PARENT, root_dir) +
                      f_bytes(F_NAME, "squashed") + f_int(F_MODE, S_IFREG | 0o644)), (EACCES,))
    s.close()


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "attack":
        attack(args[1], args[2], [int(x) for x in args[3].split(",")])
    elif len(args) == 6 and args[0] == "actfor":
        actfor(args[1], args[2], [int(x) for x in args[3].split(",")], int(args[4]), int(args[5]))
    else:
        print(__doc__)
        return 2
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
