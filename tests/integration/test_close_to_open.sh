#!/usr/bin/env bash
# test_close_to_open - what README "Consistency" promises between two mounts
# (two clients): once a writer has closed, a later open anywhere sees the
# size and bytes it left, however recently the reader's kernel cached the
# file's attributes (attr_timeout, 1 s). Each case has the reader stat the
# file first (its kernel now holds the old size), the writer change it and
# close, and the reader open at once:
#   grown by a write, grown by a truncate, cut by a truncate (read and
#   fstat), replaced by a rename, unlinked and created again, rotated
#   (the old file renamed away, the new one renamed in), and a create
#   through a name renamed away (the reader's kernel still maps the name
#   to the old file: the MDS refuses that open with ESTALE and the kernel
#   looks the name up again; the moved file is left alone), also after the
#   reader's mount saw the file under its new name (depfs-fuse then drops
#   the kernel's old names of it: kernel_names.h), then a
#   directory removed and made again by the writer (every kind of request
#   through the reader's old entry of it passes at once: the kernel walks
#   again; mkdir and symlink as well), a directory renamed away
#   (a rotation; also two levels up, after the reader saw the new name,
#   ranks that mkdir in it at once, and the reader's working directory),
#   then a seeded run of
#   random writes and truncates, each side in turn, every step checked
#   against a model of the file.
# Ends with a clean scrub.
source "$(dirname "$0")/lib.sh"

M2="$DEPFS_STATE/mnt2"
STEPS=60
SEED=34

cluster_up --servers 4 --fresh
mount_m2 "$CONF" "$DEPFS_STATE/logs/fuse2.log"
mkdir "$MNT/c2o"
setfattr -n user.depfs.layout -v 4@2@64k "$MNT/c2o"

python3 - "$MNT/c2o" "$M2/c2o" "$STEPS" "$SEED" <<'PY' || fail "a reader saw a stale size or stale bytes after the writer's close"
import multiprocessing, os, random, stat, sys, time
a, b, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
bad = 0

def check(what, got, want):
    global bad
    if got != want:
        bad += 1
        n = min(len(got), len(want))
        at = next((i for i in range(n) if got[i] != want[i]), n)
        print(f"FAIL {what}: {len(got)} bytes read, {len(want)} expected, first difference at {at}")

def read_all(path):
    with open(path, "rb") as f:
        return f.read()

def fstat_size(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)

# the fixed cases: the reader's kernel caches the old size first
f = "fixed"
with open(f"{a}/{f}", "wb") as w:
    w.write(b"x" * 1000)
os.stat(f"{b}/{f}")
with open(f"{a}/{f}", "r+b") as w:
    w.seek(300000)
    w.write(b"y" * 100)
check("grown by a write", read_all(f"{b}/{f}"), b"x" * 1000 + bytes(299000) + b"y" * 100)
os.stat(f"{b}/{f}")
os.truncate(f"{a}/{f}", 500000)
check("grown by a truncate", read_all(f"{b}/{f}"), b"x" * 1000 + bytes(299000) + b"y" * 100 + bytes(199900))
os.stat(f"{b}/{f}")
os.truncate(f"{a}/{f}", 700)
size = fstat_size(f"{b}/{f}")
if size != 700:
    bad += 1
    print(f"FAIL cut by a truncate: fstat says {size}, not 700")
check("cut by a truncate", read_all(f"{b}/{f}"), b"x" * 700)

# the name given to another file: renamed over (a checkpoint published by
# rename), then unlinked and created again; the writer's release of the
# old file may still be on its way (the MDS keeps an unlinked file open)
with open(f"{a}/{f}.new", "wb") as w:
    w.write(b"r" * 5000)
os.stat(f"{b}/{f}")
os.rename(f"{a}/{f}.new", f"{a}/{f}")
check("replaced by a rename", read_all(f"{b}/{f}"), b"r" * 5000)
os.stat(f"{b}/{f}")
os.unlink(f"{a}/{f}")
with open(f"{a}/{f}", "wb") as w:
    w.write(b"u" * 6000)
check("unlinked and created again", read_all(f"{b}/{f}"), b"u" * 6000)

# the old file keeps another name (a rotation: mv ckpt ckpt.old, then the
# new one is renamed in); and a create through the cached name after the
# file was renamed away must make a new file, not truncate the moved one
with open(f"{a}/{f}.new", "wb") as w:
    w.write(b"n" * 7000)
os.stat(f"{b}/{f}")
os.rename(f"{a}/{f}", f"{a}/{f}.old")
os.rename(f"{a}/{f}.new", f"{a}/{f}")
check("rotated: the new file", read_all(f"{b}/{f}"), b"n" * 7000)
check("rotated: the old one", read_all(f"{b}/{f}.old"), b"u" * 6000)
os.stat(f"{b}/{f}")
os.rename(f"{a}/{f}", f"{a}/kept")
with open(f"{b}/{f}", "wb") as w:
    w.write(b"c" * 10)
check("created through a name renamed away: the new file", read_all(f"{a}/{f}"), b"c" * 10)
check("created through a name renamed away: the moved one", read_all(f"{a}/kept"), b"n" * 7000)

# the same after the reader's mount was given the moved file under its new
# name (a listing, or a lookup of it): its old cached name must not pass
for seen_as in ("listing", "lookup"):
    g = f"g-{seen_as}"
    with open(f"{a}/{g}", "wb") as w:
        w.write(b"k" * 3000)
    os.stat(f"{b}/{g}")
    os.rename(f"{a}/{g}", f"{a}/{g}.moved")
    if seen_as == "listing":
        os.listdir(b)
    else:
        os.stat(f"{b}/{g}.moved")
    with open(f"{b}/{g}", "wb") as w:
        w.write(b"z" * 5)
    check(f"seen by its new name ({seen_as}), created through the old: the new file",
          read_all(f"{a}/{g}"), b"z" * 5)
    check(f"seen by its new name ({seen_as}), created through the old: the moved one",
          read_all(f"{a}/{g}.moved"), b"k" * 3000)

# a directory the writer removed and made again while the reader's kernel
# still caches the old one (entry_timeout): requests naming the old one
# are ESTALE (the MDS), and the kernel walks the path again and retries;
# a mkdir, symlink or mknod, whose lookup of the new name the kernel does
# not retry, gets ENOENT there from depfs-fuse (the name is in neither the
# old directory nor the new one), so its own request is refused and
# retried instead: every call passes at its first try
def replaced_dir(d):
    os.mkdir(f"{a}/{d}")
    with open(f"{a}/{d}/x", "w") as w:
        w.write("x")
    os.stat(f"{b}/{d}/x")
    os.unlink(f"{a}/{d}/x")
    os.rmdir(f"{a}/{d}")
    os.mkdir(f"{a}/{d}")
    with open(f"{a}/{d}/y", "w") as w:
        w.write("y")

def try_dir_op(what, fn):
    """fn's result, or None after a failure (counted)"""
    global bad
    try:
        return fn()
    except OSError as e:
        bad += 1
        print(f"FAIL replaced directory, {what}: {e}")
        return None

def read_text(path):
    with open(path) as f:
        return f.read()

def write_text(path, text):
    with open(path, "w") as w:
        w.write(text)
    return read_text(path)

# (what, the reader's request, what the writer sees after)
dir_cases = [
    ("create", lambda d: write_text(f"{b}/{d}/z", "z"), lambda d, got: read_text(f"{a}/{d}/z") == "z"),
    ("stat", lambda d: os.stat(f"{b}/{d}/y").st_size, lambda d, got: got == 1),
    ("open", lambda d: read_text(f"{b}/{d}/y"), lambda d, got: got == "y"),
    ("listing", lambda d: sorted(os.listdir(f"{b}/{d}")), lambda d, got: got == ["y"]),
    ("unlink", lambda d: os.unlink(f"{b}/{d}/y"), lambda d, got: not os.path.exists(f"{a}/{d}/y")),
    ("rename", lambda d: os.rename(f"{b}/{d}/y", f"{b}/{d}/y2"),
     lambda d, got: read_text(f"{a}/{d}/y2") == "y"),
    ("link", lambda d: os.link(f"{b}/{d}/y", f"{b}/{d}/h"), lambda d, got: read_text(f"{a}/{d}/h") == "y"),
    ("chmod", lambda d: os.chmod(f"{b}/{d}", 0o700),
     lambda d, got: (os.stat(f"{b}/{d}").st_mode & 0o777 == 0o700 and
                     os.stat(f"{b}/{d}").st_ino == os.stat(f"{a}/{d}").st_ino)),
    ("setxattr", lambda d: os.setxattr(f"{b}/{d}", "user.k", b"v"),
     lambda d, got: os.getxattr(f"{a}/{d}", "user.k") == b"v"),
    ("mkdir", lambda d: os.mkdir(f"{b}/{d}/sub"), lambda d, got: os.path.isdir(f"{a}/{d}/sub")),
    ("symlink", lambda d: os.symlink("y", f"{b}/{d}/s"), lambda d, got: os.readlink(f"{a}/{d}/s") == "y"),
    ("mknod", lambda d: os.mkfifo(f"{b}/{d}/p"), lambda d, got: stat.S_ISFIFO(os.stat(f"{a}/{d}/p").st_mode)),
]
for i, (what, op, seen) in enumerate(dir_cases):
    d = f"dir{i}"
    replaced_dir(d)
    before = bad
    got = try_dir_op(what, lambda: op(d))
    if bad == before and not seen(d, got):
        bad += 1
        print(f"FAIL replaced directory, {what}: not as the writer sees the new directory ({got!r})")

# a directory renamed away by the writer (a rotation: mv ckpt ckpt.old;
# mkdir ckpt) while the reader's kernel still maps the old path: the
# reader's requests through it (names given before a directory moved:
# the MDS's names epoch) are ESTALE and the kernel walks the path again,
# so nothing lands in ckpt.old; a process whose working directory moved
# goes on there as on a local file system
def rotate(d, made_again=True):
    os.rename(f"{a}/{d}", f"{a}/{d}.old")
    if made_again:
        os.makedirs(f"{a}/{d}/sub" if d == "rot-g" else f"{a}/{d}")

def rot_check(what, fn):
    global bad
    try:
        ok = fn()
    except OSError as e:
        ok = f"{e}"
    if ok is not True:
        bad += 1
        print(f"FAIL rotated directory, {what}: {ok}")

os.makedirs(f"{a}/rot-f")
write_text(f"{a}/rot-f/f", "old")
os.stat(f"{b}/rot-f/f")
rotate("rot-f")
rot_check("a cached file opened O_TRUNC", lambda: write_text(f"{b}/rot-f/f", "new") == "new" and
          read_text(f"{a}/rot-f.old/f") == "old" and read_text(f"{a}/rot-f/f") == "new")
os.makedirs(f"{a}/rot-g/sub")
write_text(f"{a}/rot-g/sub/f", "old")
os.stat(f"{b}/rot-g/sub/f")
rotate("rot-g")
rot_check("a cached file two levels below", lambda: write_text(f"{b}/rot-g/sub/f", "new") == "new" and
          read_text(f"{a}/rot-g.old/sub/f") == "old" and read_text(f"{a}/rot-g/sub/f") == "new")
os.makedirs(f"{a}/rot-n")
os.stat(f"{b}/rot-n")
rotate("rot-n")
rot_check("a new name", lambda: write_text(f"{b}/rot-n/f", "new") == "new" and
          not os.path.exists(f"{a}/rot-n.old/f"))
os.makedirs(f"{a}/rot-m")
os.stat(f"{b}/rot-m")
rotate("rot-m")
rot_check("mkdir", lambda: os.mkdir(f"{b}/rot-m/sub") is None and
          os.path.isdir(f"{a}/rot-m/sub") and not os.path.exists(f"{a}/rot-m.old/sub"))
os.makedirs(f"{a}/rot-o")
write_text(f"{a}/rot-o/only-old", "o")
os.stat(f"{b}/rot-o")
rotate("rot-o")
write_text(f"{a}/rot-o/only-new", "n")
def gone(path):
    try:
        os.stat(path)
        return False
    except FileNotFoundError:
        return True
rot_check("a name only in the old one, only in the new one, in neither", lambda:
          gone(f"{b}/rot-o/only-old") and read_text(f"{b}/rot-o/only-new") == "n" and
          gone(f"{b}/rot-o/neither"))
# ranks on one node mkdir in the rotated directory at once, each through
# the kernel's old name (their walks took it before any drop): after the
# first one's refusal, the others must be refused too, not land in
# ckpt.old, and each mkdir passes at its first try
RANKS, RANK_TRIALS = 8, 3
def rank_mkdir(d, i, go, out):
    go.wait(30)
    try:
        out.put((i, os.mkdir(f"{b}/{d}/r{i}")))
    except OSError as e:
        out.put((i, f"{e}"))
def ranks_in_rotated(d):
    os.makedirs(f"{a}/{d}")
    os.stat(f"{b}/{d}")
    go, out = multiprocessing.Event(), multiprocessing.Queue()
    ps = [multiprocessing.Process(target=rank_mkdir, args=(d, i, go, out)) for i in range(RANKS)]
    for p in ps:
        p.start()
    rotate(d)
    go.set()
    got = [out.get(timeout=60) for _ in ps]
    for p in ps:
        p.join(30)
    failed = [r for r in got if r[1] is not None]
    return (not failed and not os.listdir(f"{a}/{d}.old") and
            sorted(os.listdir(f"{a}/{d}")) == sorted(f"r{i}" for i in range(RANKS))) or \
        f"failed {failed}, in the old directory {sorted(os.listdir(f'{a}/{d}.old'))}"
for t in range(RANK_TRIALS):
    rot_check(f"{RANKS} ranks mkdir at once (trial {t})", lambda: ranks_in_rotated(f"rot-ranks{t}"))
os.makedirs(f"{a}/rot-s")
write_text(f"{a}/rot-s/f", "old")
os.stat(f"{b}/rot-s/f")
rotate("rot-s")
os.stat(f"{b}/rot-s.old/f") # the reader's mount sees the moved directory's new name
rot_check("written through the old name after the new one was seen",
          lambda: write_text(f"{b}/rot-s/f", "new") == "new" and read_text(f"{a}/rot-s.old/f") == "old")
os.makedirs(f"{a}/rot-c")
write_text(f"{a}/rot-c/was", "w")
here = os.getcwd()
os.chdir(f"{b}/rot-c")
rotate("rot-c", made_again=False)
rot_check("working directory moved", lambda: write_text("here", "h") == "h" and
          os.mkdir("sub") is None and read_text(f"{a}/rot-c.old/here") == "h" and
          os.path.isdir(f"{a}/rot-c.old/sub") and read_text("was") == "w" and gone("neither"))
os.chdir(here)
os.makedirs(f"{a}/rot-u")
write_text(f"{a}/rot-u/f", "u")
os.stat(f"{b}/rot-u/f")
os.makedirs(f"{a}/rot-elsewhere")
rotate("rot-elsewhere", made_again=False)
rot_check("a directory renamed elsewhere", lambda: read_text(f"{b}/rot-u/f") == "u")
rot_check("a directory renamed elsewhere, mkdir at once", lambda: os.mkdir(f"{b}/rot-u/sub") is None)
os.makedirs(f"{a}/rot-r/deep")
os.rename(f"{a}/rot-r", f"{a}/rot-r2")
rot_check("the renamer's own mkdir below the moved directory",
          lambda: os.mkdir(f"{a}/rot-r2/deep/sub") is None and os.path.isdir(f"{b}/rot-r2/deep/sub"))

# random writes and truncates, each side in turn, checked from the other
rng = random.Random(seed)
model = bytearray()
f = "random"
open(f"{a}/{f}", "wb").close()
limit = 3 << 20
for step in range(steps):
    side, other = (a, b) if step % 2 == 0 else (b, a)
    os.stat(f"{other}/{f}")
    fd = os.open(f"{side}/{f}", os.O_RDWR)
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.7:
            off = rng.randrange(limit)
            data = bytes([rng.randrange(1, 256)]) * rng.choice((1, 100, 4096, 65536, 200000))
            os.pwrite(fd, data, off)
            model.extend(bytes(max(0, off - len(model))))
            model[off:off + len(data)] = data
        else:
            size = rng.randrange(limit)
            os.ftruncate(fd, size)
            del model[size:]
            model.extend(bytes(size - len(model)))
    os.close(fd)
    check(f"random step {step}", read_all(f"{other}/{f}"), bytes(model))
    if bad:
        break
sys.exit(1 if bad else 0)
PY

scrub_clean
log "PASS"
