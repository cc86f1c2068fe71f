#!/usr/bin/env python3
"""handles.py - inode handles (mds/handles.h) for the raw-frame tests: a
MUNGE user names an inode other than the root only with the tag the MDS
gave with it (Attr.tag, Dirent.tag), in the request's *_tag field beside
each inode number (ino_tag, parent_tag, new_parent_tag, migrate_ino_tag).

    s = authwire.connect(mds, munge_socket=sock)
    h = Handles(s)
    ino = h.walk("/pub/mine")               # LOOKUPs from the root
    hdr = h.field(F_INO, ino) + ...         # ino and, when known, its tag
    err, msg, reply = call(s, MDS_GETATTR, hdr)

Replies are parsed whole (repeated fields kept: readdir entries), fixed64
fields included, which authwire._parse does not read.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import authwire  # noqa: E402
from authwire import f_bytes, f_int, varint  # noqa: E402
from badwire import HEADER, frame, recv_exact  # noqa: E402

ROOT_INO = 1
MDS_LOOKUP, MDS_GETATTR, MDS_READDIR = 2, 3, 11
F_PARENT, F_NAME, F_INO, F_NEW_PARENT, F_MIGRATE_INO = 2, 3, 4, 9, 37
# proto MdsRequest: each inode-number field's tag
TAG_FIELD = {F_INO: 40, F_PARENT: 41, F_NEW_PARENT: 42, F_MIGRATE_INO: 43}
R_ERR, R_ATTR, R_ENTRIES, R_MESSAGE = 1, 2, 4, 17
A_INO, A_MODE, A_TAG = 1, 2, 13    # Attr
D_NAME, D_INO, D_MODE, D_TAG = 1, 2, 3, 5  # Dirent
WT_VARINT, WT_FIXED64, WT_BYTES, WT_FIXED32 = 0, 1, 2, 5


def f_fixed64(field, v):
    return varint(field << 3 | WT_FIXED64) + struct.pack("<Q", v)


def parse(buf):
    """{field: [values]} of a protobuf message (every wire type DePFS uses)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = authwire._read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == WT_VARINT:
            v, i = authwire._read_varint(buf, i)
        elif wt == WT_FIXED64:
            v, i = struct.unpack_from("<Q", buf, i)[0], i + 8
        elif wt == WT_FIXED32:
            v, i = struct.unpack_from("<I", buf, i)[0], i + 4
        elif wt == WT_BYTES:
            n, i = authwire._read_varint(buf, i)
            v, i = bytes(buf[i:i + n]), i + n
        else:
            raise ValueError("unexpected wire type %d" % wt)
        out.setdefault(num, []).append(v)
    return out


def one(msg, field, default=None):
    return msg.get(field, [default])[-1]


def call(s, op, hdr):
    """(err, message, {field: [values]}) of one MDS request; None when the
    connection closed."""
    try:
        s.sendall(frame(op, hdr))
        raw = recv_exact(s, HEADER.size)
        if raw is None:
            return None
        hlen, blen = HEADER.unpack(raw)[4:6]
        body = recv_exact(s, hlen + blen)
    except (ConnectionError, OSError):
        return None
    if body is None:
        return None
    rep = parse(body[:hlen])
    msg = one(rep, R_MESSAGE, b"").decode(errors="replace")
    return one(rep, R_ERR, 0), msg, rep


def attr(rep):
    """{ino, mode, tag} of a reply's Attr (tag None: none given)."""
    raw = one(rep, R_ATTR)
    if raw is None:
        return None
    a = parse(raw)
    return {"ino": one(a, A_INO), "mode": one(a, A_MODE), "tag": one(a, A_TAG)}


def entries(rep):
    """[{name, ino, mode, tag}] of a READDIR reply (tag None: none given)."""
    out = []
    for raw in rep.get(R_ENTRIES, []):
        d = parse(raw)
        out.append({"name": one(d, D_NAME, b"").decode(), "ino": one(d, D_INO),
                    "mode": one(d, D_MODE), "tag": one(d, D_TAG)})
    return out


class Handles:
    """The tags one connection was given, as libdepfs keeps them."""

    def __init__(self, s):
        self.s, self.tags = s, {}

    def learn(self, rep):
        a = attr(rep)
        if a and a["tag"] is not None:
            self.tags[a["ino"]] = a["tag"]
        for e in entries(rep):
            if e["tag"] is not None:
                self.tags[e["ino"]] = e["tag"]

    def field(self, num, ino, tag=None):
        """An inode-number field and its tag: tag as given, else the one
        known (none for the root or an inode never met)."""
        out = f_int(num, ino)
        if tag is None and ino != ROOT_INO:
            tag = self.tags.get(ino)
        return out + (f_fixed64(TAG_FIELD[num], tag) if tag is not None else b"")

    def call(self, op, hdr):
        ans = call(self.s, op, hdr)
        if ans and ans[0] == 0:
            self.learn(ans[2])
        return ans

    def lookup(self, parent, name):
        """(err, ino) of a LOOKUP with parent's tag."""
        ans = self.call(MDS_LOOKUP, self.field(F_PARENT, parent) + f_bytes(F_NAME, name))
        if ans is None or ans[0] != 0:
            return (ans[0] if ans else None), None
        return 0, attr(ans[2])["ino"]

    def walk(self, path):
        """The inode of an absolute path, looked up from the root; raises
        OSError when a step is refused."""
        ino = ROOT_INO
        for name in [p for p in path.split("/") if p]:
            err, ino = self.lookup(ino, name)
            if err != 0:
                raise OSError(err or 0, "LOOKUP of '%s' in %s failed" % (name, path))
        return ino
