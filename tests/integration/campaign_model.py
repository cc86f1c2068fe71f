"""campaign_model.py - the fault campaign's model of what the file system
must hold, built from the workload clients' journals, and the checker that
compares a file's bytes with it.

Every client (campaign_client.py) appends one JSON line per operation to its
own journal BEFORE it issues the operation (the intent) and one after it (the
result: {"ok": 1} or {"e": errno}). A client that is SIGKILLed leaves an
intent without a result. Replaying the journals gives, per file:

  exact  bytes that an fsync acknowledged (in the order the client issued
         them); never-written bytes below the size are holes (exact zeros)
  state  0 = exact, 1 = uncertain: a write/truncate was in flight or failed
         when a fault hit. An uncertain byte may hold its old value (the one
         in `exact`) or the value of any write/truncate that was pending on
         that byte when the failure happened (`cands`), never anything else
  lo,hi  bounds of the file size: lo = the end of the last acknowledged
         byte (an fsync-acknowledged extension must survive), hi = the end of
         anything ever attempted

Acknowledgement rule: a write or truncate that returned success is pending
until the same client's next fsync on that file returns 0; then it is
acknowledged. An fsync that fails, a failed write/truncate, a close with
pending operations, or the end of a journal (killed client) turns every
pending operation of that file handle into uncertain bytes.

Concurrent clients never write the same bytes: shared files are cut into
slices of `width` bytes; slice j belongs to slot j % NSLOTS (see owner()),
so several clients overwrite the same stripes on disjoint byte ranges and the
expected content stays exact."""
import json
import os
import random

NSLOTS = 6  # client slots owning shared-file slices: 2 mounts, 2 libdepfs, 2 replacements


_POOL = None
POOL_BYTES = 8 << 20


def data_for(ds, n):
    """The bytes a write with data seed ds and length n (<= 4 MiB) carries: a
    slice of a fixed random pool starting where the seed says (cheap to
    regenerate; two writes of the same range differ in ~255 of 256 bytes,
    so stale or zeroed data never passes for the acknowledged data)."""
    global _POOL
    if _POOL is None:
        _POOL = random.Random("depfs-campaign-pool").randbytes(POOL_BYTES)
    assert n <= POOL_BYTES // 2
    start = ds % (POOL_BYTES - n + 1)
    return _POOL[start:start + n]


def owner(off, width):
    return (off // width) % NSLOTS


class FileModel:
    def __init__(self, fid, path, layout, shared=False):
        self.fid, self.path, self.layout, self.shared = fid, path, layout, shared
        self.exact = bytearray()
        self.state = bytearray()
        self.cands = []  # (start, end, bytes): possible contents of uncertain bytes
        self.lo = self.hi = 0
        self.paths = [path]       # where it may be (an uncertain rename adds one)
        self.exists = "yes"       # "yes" | "maybe" (uncertain create/unlink) | "no"
        self.acked_writes = 0
        self.uncertain_ops = 0

    def _grow(self, n):
        if n > len(self.exact):
            self.exact.extend(bytes(n - len(self.exact)))
            self.state.extend(bytes(n - len(self.state)))

    def _trim_cands(self, a, b):
        out = []
        for s, e, d in self.cands:
            if e <= a or s >= b:
                out.append((s, e, d))
                continue
            if s < a:
                out.append((s, a, d[:a - s]))
            if e > b:
                out.append((b, e, d[b - s:]))
        self.cands = out

    def ack_write(self, off, data):
        end = off + len(data)
        self._grow(end)
        self.exact[off:end] = data
        self.state[off:end] = bytes(len(data))
        self._trim_cands(off, end)
        self.lo, self.hi = max(self.lo, end), max(self.hi, end)
        self.acked_writes += 1

    def ack_truncate(self, size):
        self._grow(size)
        n = len(self.exact) - size
        self.exact[size:] = bytes(n)
        self.state[size:] = bytes(n)
        self._trim_cands(size, len(self.exact))
        self.lo = self.hi = size

    def uncertain_write(self, off, data):
        end = off + len(data)
        self._grow(end)
        self.state[off:end] = b"\x01" * len(data)
        self.cands.append((off, end, bytes(data)))
        self.hi = max(self.hi, end)
        self.uncertain_ops += 1

    def uncertain_truncate(self, size):
        top = max(self.hi, size)
        self._grow(top)
        if top > size:
            self.state[size:top] = b"\x01" * (top - size)
            self.cands.append((size, top, bytes(top - size)))
        self.lo, self.hi = min(self.lo, size), top
        self.uncertain_ops += 1

    def acked_bytes(self):
        return self.state[:self.lo].count(0)

    def compare(self, got):
        """None if got is a content the model allows, else a dict describing
        the first problem: kind ('size', 'lost' = an acknowledged byte is
        wrong, 'neither' = an uncertain byte is neither old nor in-flight),
        offset, got/want bytes, and the number of wrong acknowledged bytes."""
        g = len(got)
        if g < self.lo or g > self.hi:
            return {"kind": "size", "offset": min(g, self.lo), "size": g, "lo": self.lo, "hi": self.hi,
                    "lost": max(0, self.lo - g) and self.state[g:self.lo].count(0)}
        exp = bytes(self.exact[:g])
        if got == exp:
            return None
        first, lost, CH = None, 0, 1 << 16
        for c in range(0, g, CH):
            if got[c:c + CH] == exp[c:c + CH]:
                continue
            for i in range(c, min(g, c + CH)):
                if got[i] == exp[i]:
                    continue
                if self.state[i] == 0:
                    lost += 1
                    if first is None:
                        first = {"kind": "lost", "offset": i, "got": got[i], "want": exp[i]}
                    continue
                if any(s <= i < e and d[i - s] == got[i] for s, e, d in self.cands):
                    continue
                if first is None:
                    alts = sorted({exp[i]} | {d[i - s] for s, e, d in self.cands if s <= i < e})
                    first = {"kind": "neither", "offset": i, "got": got[i], "want": alts}
        if first is None:
            return None
        first["lost"] = lost
        # the extent of the first wrong run of acknowledged bytes, for the report
        if first["kind"] == "lost":
            i = first["offset"]
            j = i
            while j < g and (got[j] != exp[j] or self.state[j]) and j - i < (64 << 20):
                j += 1
            first["run"] = j - i
            first["zeros"] = got[i:j].count(0) == j - i
        return first


class Model:
    def __init__(self):
        self.files = {}
        self.warnings = []
        self.migrates = [0, 0]  # depfs migrate runs: [done, failed or cut off]

    def add_shared(self, fid, path, layout, width):
        m = FileModel(fid, path, layout, shared=True)
        m.width = width
        self.files[fid] = m
        return m

    def replay(self, journal_path):
        """Applies one client's journal. Operations are sequential per
        client: each result line belongs to the intent just before it."""
        recs = []
        with open(journal_path, "rb") as f:
            for line in f:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    break  # a torn last line of a killed client: its op has no result
        pending = {}  # fid -> [op], the ops since that handle's last fsync
        i = 0
        while i < len(recs):
            op = recs[i]
            if op.get("t") == "r":  # a result without an intent: ignore
                i += 1
                continue
            res = recs[i + 1] if i + 1 < len(recs) and recs[i + 1].get("t") == "r" else None
            i += 2 if res is not None else 1
            ok = res is not None and res.get("ok") == 1
            self._apply(op, ok, res is not None, pending)
        for fid in list(pending):
            self._uncertain(fid, pending.pop(fid))

    def _uncertain(self, fid, ops):
        m = self.files.get(fid)
        if m is None:
            return
        for op in ops:
            if op["t"] == "w":
                m.uncertain_write(op["o"], data_for(op["d"], op["n"]))
            elif op["t"] == "trunc":
                m.uncertain_truncate(op["s"])

    def _apply(self, op, ok, answered, pending):
        t, fid = op["t"], op.get("f")
        if t == "create":
            m = FileModel(fid, op["p"], op["l"])
            if not ok:
                m.exists = "maybe"  # it may or may not have been made; the client never uses it
            self.files[fid] = m
            return
        m = self.files.get(fid)
        if m is None:
            self.warnings.append(f"journal names unknown file {fid}")
            return
        if t in ("w", "trunc"):
            pending.setdefault(fid, []).append(op)
            if not ok:
                self._uncertain(fid, pending.pop(fid))
        elif t == "fsync":
            ops = pending.pop(fid, [])
            if ok:
                for p in ops:
                    if p["t"] == "w":
                        m.ack_write(p["o"], data_for(p["d"], p["n"]))
                    else:
                        m.ack_truncate(p["s"])
            else:
                self._uncertain(fid, ops)
        elif t == "close":
            self._uncertain(fid, pending.pop(fid, []))
        elif t == "rename":
            if ok:
                m.paths = [op["p"]]
            else:
                m.paths = m.paths + [op["p"]]
        elif t == "unlink":
            m.exists = "no" if ok else "maybe"
        elif t == "migrate":  # keeps the bytes and the name, whatever its result
            self.migrates[0 if ok else 1] += 1
        elif t == "open":
            pass

    def build(self, journal_dir):
        for name in sorted(os.listdir(journal_dir)):
            if name.endswith(".jsonl"):
                self.replay(os.path.join(journal_dir, name))
        return self
