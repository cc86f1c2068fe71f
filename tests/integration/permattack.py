#!/usr/bin/env python3
"""permattack.py - POSIX permissions at the MDS (issue 13), by hand-built
frames from a MUNGE-proven user; used by test_permissions.sh.

    permattack.py attack MDS_ADDR MUNGE_SOCKET INOS
        run as an unprivileged user: every request claims uid 0, gid 0 and
        group 0 (which the MDS must ignore) and tries what only root or an
        owner may: chmod 04777 / chown to 0 of root's file, unlink it,
        rename over it, unlink root's file in a sticky directory, set the
        layout of root's directory, list a 0700 directory, create in a 0755
        root directory, chown its own file to root, open root's 0600 file,
        hard-link root's 0600 file, make a character device, swap a copy
        of its own in for root's files (migrate) in the sticky directory
        and in root's directory, and swap another client's copy in for its
        own file. Then, as the owner, a chmod of its own file, a hard link
        of it and a FIFO (allowed); as a writer of root's 0666 file, a
        SET_CTIME claiming 1970 and size commits claiming an mtime of 1970
        and of 2116 (allowed: test_permissions.sh checks that ctime and
        mtime stayed the MDS's).
    permattack.py actfor MDS_ADDR MUNGE_SOCKET INOS UID GID
        run as root (by MUNGE, on a client node): a create in the sticky
        directory claiming UID/GID is made for them (depfs-fuse acting for
        a kernel request's caller); claiming uid 0 it is squashed and may
        not create in the root directory.

INOS is "root_file,root_dir,sticky_dir,sticky_root_file,private_dir,own_file,
open_root_file" (inode numbers; own_file is in sticky_dir, named "mine";
sticky_root_file is named "rootfile", 0666; root_file is "/secret";
open_root_file is "/open666", 0666, as long as rootfile; sticky_dir is
"/pub", private_dir "/priv"). Each request names its inodes with the
handle tags a walk from the root gave (handles.py: the MDS refuses a
user's bare inode numbers), so what is refused here is refused by the
permission checks. Each case prints "ok <case>: ..." or "FAIL <case>:
..."; exit 0 when every case went as it should.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from authattack import EACCES, EPERM, note, refused, results, roundtrip  # noqa: E402
from authwire import f_bytes, f_int  # noqa: E402
from badwire import HEADER, frame, recv_exact  # noqa: E402
from handles import Handles, one, parse  # noqa: E402

PATHS = ("/secret", "/", "/pub", "/pub/rootfile", "/priv", "/pub/mine", "/open666")  # INOS' order

(MDS_CREATE, MDS_SETATTR, MDS_UNLINK, MDS_RENAME, MDS_READDIR, MDS_SETXATTR,
 MDS_OPEN) = 5, 4, 8, 10, 11, 16, 23
MDS_REGISTER, MDS_GETATTR, MDS_MKNOD, MDS_LINK, MDS_EXTEND, MDS_MIGRATE_SWAP = 1, 3, 6, 14, 20, 27
F_CLIENT_ID, F_PARENT, F_NAME, F_INO, F_MODE, F_UID, F_GID, F_RDEV = 1, 2, 3, 4, 5, 6, 7, 8
F_NEW_PARENT, F_NEW_NAME, F_FLAGS, F_SET_MASK, F_ATTR = 9, 10, 11, 13, 14
F_XATTR_NAME, F_XATTR_VALUE, F_GROUPS, F_RENEW_HOLD = 20, 21, 26, 35
F_SIZE, F_MTIME_NS, F_TICKET, F_MIGRATE_INO, F_DATA_VERSION, F_UNLINKED = 22, 23, 34, 37, 38, 39
R_ATTR, R_CLIENT_ID, R_TICKET = 2, 9, 19  # MdsReply
A_INO, A_SIZE, A_DATA_VERSION = 1, 7, 12  # Attr
SET_MODE, SET_UID, SET_CTIME = 1, 2, 1024
S_IFREG, S_IFCHR, S_IFIFO = 0o100000, 0o020000, 0o010000
DEV_NULL = 0x0103  # 1:3, /dev/null
O_RDONLY, O_RDWR = 0, 2
CTIME_1970_NS = 7
MTIME_1970_NS = 42
MTIME_2116_NS = 2**62


def claim(uid=0, gid=0):
    """What a request says about its caller (ignored for a plain user)."""
    return f_int(F_UID, uid) + f_int(F_GID, gid) + f_int(F_GROUPS, gid)


def attr(ino, mode=0, uid=0, gid=0, ctime_ns=0):
    """An Attr with every required field (only those the mask names count)."""
    body = (f_int(1, ino) + f_int(2, mode) + f_int(3, 1) + f_int(4, uid) + f_int(5, gid) +
            f_int(6, 0) + f_int(7, 0) + f_int(8, 0) + f_int(9, 0) + f_int(10, ctime_ns))
    return f_bytes(F_ATTR, body)


def allowed(case, answer):
    ok = answer is not None and answer[0] == 0
    note(ok, case, "done" if ok else ("err %s %s" % answer if answer else "connection closed"))


def call(s, type_, hdr):
    """The whole MdsReply of one request, as {field: value}."""
    s.sendall(frame(type_, hdr))
    hlen = HEADER.unpack(recv_exact(s, HEADER.size))[4]
    return authwire._parse(recv_exact(s, hlen))


def register(mds, sock):
    """A client of the MDS's own, as libdepfs registers: (client id, ticket)."""
    s = authwire.connect(mds, munge_socket=sock)
    rep = call(s, MDS_REGISTER, b"")
    s.close()
    return rep[R_CLIENT_ID], rep[R_TICKET]


def file_attr(h, ino):
    """(size, data version) of file ino."""
    _err, _msg, rep = h.call(MDS_GETATTR, claim() + h.field(F_INO, ino))
    a = parse(one(rep, R_ATTR))
    return one(a, A_SIZE, 0), one(a, A_DATA_VERSION, 0)


def new_copy(h, client, ticket, parent, size):
    """`depfs migrate`'s copy: a file without a name in parent, held open by
    client (its ticket), grown to size bytes; its inode."""
    as_client = f_int(F_CLIENT_ID, client) + f_bytes(F_TICKET, ticket)
    _err, _msg, rep = h.call(MDS_CREATE, claim() + as_client + h.field(F_PARENT, parent) +
                             f_int(F_MODE, S_IFREG | 0o600) + f_int(F_FLAGS, O_RDWR) +
                             f_int(F_UNLINKED, 1))
    ino = one(parse(one(rep, R_ATTR)), A_INO)
    h.call(MDS_EXTEND, claim() + h.field(F_INO, ino) + f_int(F_SIZE, size))
    return ino


def swap(s, h, client, ticket, parent, name, ino, copy):
    """MDS_MIGRATE_SWAP of name (inode ino) in parent for copy, as client."""
    _size, version = file_attr(h, ino)
    return roundtrip(s, MDS_MIGRATE_SWAP, claim() + f_int(F_CLIENT_ID, client) +
                     f_bytes(F_TICKET, ticket) + h.field(F_PARENT, parent) + f_bytes(F_NAME, name) +
                     h.field(F_INO, ino) + h.field(F_MIGRATE_INO, copy) +
                     f_int(F_DATA_VERSION, version))


def attack_links_and_times(s, h, inos):
    """Hard links, device nodes and times: what a writer may not make up."""
    root_file, _root_dir, sticky, sticky_root, _private, mine, _open = inos
    refused("LINK of root's 0600 file into the sticky dir (protected_hardlinks)",
            roundtrip(s, MDS_LINK, claim() + h.field(F_INO, root_file) + h.field(F_NEW_PARENT, sticky) +
                      f_bytes(F_NEW_NAME, "stolen")), (EPERM,))
    allowed("LINK of its own file (the owner)",
            roundtrip(s, MDS_LINK, claim() + h.field(F_INO, mine) + h.field(F_NEW_PARENT, sticky) +
                      f_bytes(F_NEW_NAME, "mine-link")))
    allowed("UNLINK of its own link",
            roundtrip(s, MDS_UNLINK, claim() + h.field(F_PARENT, sticky) + f_bytes(F_NAME, "mine-link")))
    refused("MKNOD of a character device (root only)",
            roundtrip(s, MDS_MKNOD, claim() + h.field(F_PARENT, sticky) + f_bytes(F_NAME, "nulldev") +
                      f_int(F_MODE, S_IFCHR | 0o666) + f_int(F_RDEV, DEV_NULL)), (EPERM,))
    allowed("MKNOD of a FIFO",
            roundtrip(s, MDS_MKNOD, claim() + h.field(F_PARENT, sticky) + f_bytes(F_NAME, "fifo") +
                      f_int(F_MODE, S_IFIFO | 0o644)))
    allowed("SETATTR SET_CTIME of root's 0666 file claiming 1970 (a writer: ctime = now)",
            roundtrip(s, MDS_SETATTR, claim() + h.field(F_INO, sticky_root) +
                      f_int(F_SET_MASK, SET_CTIME) + attr(sticky_root, ctime_ns=CTIME_1970_NS)))
    for what, mtime in (("1970", MTIME_1970_NS), ("2116", MTIME_2116_NS)):
        allowed("EXTEND of root's 0666 file claiming mtime %s (a writer: kept near now)" % what,
                roundtrip(s, MDS_EXTEND, claim() + h.field(F_INO, sticky_root) + f_int(F_SIZE, 0) +
                          f_int(F_MTIME_NS, mtime)))


def attack_migrate(mds, sock, s, h, inos):
    """MDS_MIGRATE_SWAP: a copy of its own for root's files where it may not
    replace the name, and another client's copy for its own file."""
    _root_file, root_dir, sticky, sticky_root, _private, mine, open_root = inos
    me, ticket = register(mds, sock)
    other, other_ticket = register(mds, sock)
    size, _v = file_attr(h, sticky_root)
    copy = new_copy(h, me, ticket, sticky, size)
    refused("MIGRATE_SWAP of its copy for root's file in a sticky dir",
            swap(s, h, me, ticket, sticky, "rootfile", sticky_root, copy), (EPERM,))
    refused("MIGRATE_SWAP of its copy for root's 0666 file in root's 0755 dir",
            swap(s, h, me, ticket, root_dir, "open666", open_root, copy), (EACCES,))
    size, _v = file_attr(h, mine)
    copy = new_copy(h, me, ticket, sticky, size)
    refused("MIGRATE_SWAP of client %d's copy for its own file by client %d" % (me, other),
            swap(s, h, other, other_ticket, sticky, "mine", mine, copy), (EPERM,))


def learn(s, inos):
    """The tags of INOS' inodes, by LOOKUPs from the root (as any user may)."""
    h = Handles(s)
    for path, ino in zip(PATHS, inos):
        got = h.walk(path)
        if got != ino:
            raise SystemExit("%s is inode %d, not %d" % (path, got, ino))
    return h


def attack(mds, sock, inos):
    root_file, root_dir, sticky, sticky_root, private, mine, _open_root = inos
    s = authwire.connect(mds, munge_socket=sock)
    h = learn(s, inos)
    refused("SETATTR mode 04777 of root's file",
            roundtrip(s, MDS_SETATTR, claim() + h.field(F_INO, root_file) +
                      f_int(F_SET_MASK, SET_MODE) + attr(root_file, mode=0o4777)), (EPERM,))
    refused("SETATTR uid 0 -> 0 of root's file (not the owner)",
            roundtrip(s, MDS_SETATTR, claim() + h.field(F_INO, root_file) +
                      f_int(F_SET_MASK, SET_UID) + attr(root_file, uid=0)), (EPERM,))
    refused("UNLINK of root's /secret",
            roundtrip(s, MDS_UNLINK, claim() + h.field(F_PARENT, root_dir) +
                      f_bytes(F_NAME, "secret")), (EACCES,))
    refused("RENAME of its file over root's /secret",
            roundtrip(s, MDS_RENAME, claim() + h.field(F_PARENT, sticky) + f_bytes(F_NAME, "mine") +
                      h.field(F_NEW_PARENT, root_dir) + f_bytes(F_NEW_NAME, "secret")), (EACCES,))
    refused("RENAME of its file over root's file in a sticky dir",
            roundtrip(s, MDS_RENAME, claim() + h.field(F_PARENT, sticky) + f_bytes(F_NAME, "mine") +
                      h.field(F_NEW_PARENT, sticky) + f_bytes(F_NEW_NAME, "rootfile")), (EPERM,))
    refused("UNLINK of root's file in a sticky dir",
            roundtrip(s, MDS_UNLINK, claim() + h.field(F_PARENT, sticky) +
                      f_bytes(F_NAME, "rootfile")), (EPERM,))
    refused("SETXATTR of the layout of root's directory",
            roundtrip(s, MDS_SETXATTR, claim() + h.field(F_INO, root_dir) +
                      f_bytes(F_XATTR_NAME, "user.depfs.layout") + f_bytes(F_XATTR_VALUE, "2@1")),
            (EPERM,))
    refused("READDIR of a 0700 directory",
            roundtrip(s, MDS_READDIR, claim() + h.field(F_INO, private)), (EACCES,))
    refused("CREATE in the 0755 root directory",
            roundtrip(s, MDS_CREATE, claim() + h.field(F_PARENT, root_dir) + f_bytes(F_NAME, "evil") +
                      f_int(F_MODE, S_IFREG | 0o644)), (EACCES,))
    refused("SETATTR uid 0 of its own file (chown to root)",
            roundtrip(s, MDS_SETATTR, claim() + h.field(F_INO, mine) +
                      f_int(F_SET_MASK, SET_UID) + attr(mine, uid=0)), (EPERM,))
    refused("OPEN of root's 0600 file for reading",
            roundtrip(s, MDS_OPEN, claim() + h.field(F_INO, root_file) + f_int(F_FLAGS, O_RDONLY)),
            (EACCES,))
    refused("OPEN renew_hold of root's 0600 file (a hold without a permission check: the "
            "cluster key's holders only)",
            roundtrip(s, MDS_OPEN, claim() + h.field(F_INO, root_file) + f_int(F_FLAGS, O_RDONLY) +
                      f_int(F_RENEW_HOLD, 1)), (EPERM,))
    allowed("SETATTR mode 0640 of its own file (the owner)",
            roundtrip(s, MDS_SETATTR, claim() + h.field(F_INO, mine) +
                      f_int(F_SET_MASK, SET_MODE) + attr(mine, mode=0o640)))
    attack_links_and_times(s, h, inos)
    attack_migrate(mds, sock, s, h, inos)
    s.close()


def actfor(mds, sock, inos, uid, gid):
    _root_file, root_dir, sticky, _sr, _private, _mine, _open_root = inos
    s = authwire.connect(mds, munge_socket=sock)
    h = Handles(s)
    if h.walk("/pub") != sticky:
        raise SystemExit("/pub is not inode %d" % sticky)
    allowed("CREATE in the sticky dir for uid %d" % uid,
            roundtrip(s, MDS_CREATE, claim(uid, gid) + h.field(F_PARENT, sticky) +
                      f_bytes(F_NAME, "actfor") + f_int(F_MODE, S_IFREG | 0o644)))
    refused("CREATE in the root dir by squashed root",
            roundtrip(s, MDS_CREATE, claim(0, 0) + h.field(F_PARENT, root_dir) +
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
