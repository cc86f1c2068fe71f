#!/usr/bin/env python3
"""campaign.py - the randomized, seeded fault campaign (issue 10): every
fsync-acknowledged byte must survive any fault the design tolerates.

  campaign.py [--seed S] [--rounds N] [--round-seconds T] [--max-minutes M]
              [--keep-going] [--state DIR] [--mpich-lib DIR|none]

One ROUND: a fresh 8-server cluster (deploy/local-cluster; in some rounds
one I/O server lives in a network namespace, one has a small tmpfs as its
data dir, and/or one has its data dir on a disk that can be made slow),
directories with layouts 8@6, 8@7 and 4@2, shared files in each. Workload
clients run concurrently (campaign_client.py): one on the cluster's mount,
one on a second depfs-fuse mount, one or two on libdepfs; they journal every
operation. With MPICH and the DePFS ROMIO driver built
(client/adio/build-mpich.sh; --mpich-lib), an MPI-IO client runs beside them
(campaign_mpiio.py: 2-rank jobs through the driver, small records gathered
at MPI_File_sync, N-1 collective blocks). Meanwhile a seeded schedule of
faults runs (campaign_faults.Injector): SIGSTOP/SIGCONT of an I/O server
(short, and long across the detection timeout), SIGKILL + restart (with and
without --rebuild), SIGKILL + restart of depfs-recovery and of the MDS,
SIGKILL of a libdepfs client or of an MPI-IO job's ranks mid-write, a
network partition of the namespaced server, a full data dir, a slow disk
(every read, write and fsync of one server's data dir waits 20 ms to
1.5 s for a while; the server keeps answering heartbeats). One fault at a
time, and the next only after every server is up again and has stayed so
for a few seconds: never more than one server of any layout unavailable.
After the workload: heal, wait until every server is up and nothing is
rebuilding, then check
  (a) every acknowledged byte reads back exactly, through a fresh libdepfs
      client and through a mount (campaign_model: exact bytes, and bytes a
      failed or interrupted operation may have left old-or-new); every file
      an MPI-IO job had synced and closed reads back exactly through the
      driver, and no such job hung;
  (b) the same with n-k servers killed for each layout group (8@6 and 4@2:
      two servers; 8@7: one), so reads decode through parity; they are
      restarted with --rebuild and the cluster must become healthy again;
  (c) `depfs scrub --all` exits 0 and its JSON reports 0 bad stripes;
  (d) no stripe lock held on any server (after one lease + heartbeat);
  (e) every server up; (f) every daemon alive and no "Assertion",
      "assertion", "AddressSanitizer", "runtime error" or "abort" line in
      their logs, and the MDS never called a server out of service while
      that server still served reads (serve_order.py).
The seed (printed) fixes the rounds' plans, the fault schedules and every
client's sequence of operations (timing differs from run to run). Exit 0
when every check of every round passed; 1 otherwise, with a message naming
the seed, round, file, offset and first wrong byte."""
import argparse
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from campaign_faults import Cluster, ClusterError, Injector  # noqa: E402
from campaign_model import Model  # noqa: E402
import campaign_mpiio  # noqa: E402

TOP = os.environ.get("DEPFS_TOP") or os.path.abspath(os.path.join(HERE, "..", ".."))
LAYOUTS = {"8@6": "/L8_6", "8@7": "/L8_7", "4@2": "/L4_2"}
DEGRADED_GROUPS = [("8@6", "4@2"), ("8@7",)]   # files tolerating 2 and 1 lost servers
SETTLE_S = 150        # bound: a healed fault to every server up again
CLIENT_MARK_EXPIRY_S = 5.5  # server_down_expiry_ms (default 5000) + slack
HEAL_S = 240          # bound: the end of a round to every server up, nothing rebuilding
CLIENT_STOP_S = 90    # bound: the stop file to every client gone
MPIIO_SLOT = 6        # after the mounts (0, 1) and the libdepfs clients and their replacements (2-5)
MPICC_S = 120         # bound: compiling the MPI-IO client's program
VERIFY_S = 600        # bound: one verify pass


def say(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ plan
FAULT_WEIGHTS = [("stop_long", 30), ("stop_short", 10), ("kill_restart", 12), ("kill_recovery", 6),
                 ("kill_mds", 6), ("kill_client", 8), ("stop_long_recovery", 6),
                 ("partition", 15), ("fill", 15)]


def plan_round(seed, rnd, a, root):
    """Everything random about round rnd, from the seed alone."""
    r = random.Random(f"{seed}/{rnd}/plan")
    p = {"round": rnd}
    p["ns_server"] = r.randrange(8) if root and r.random() < 0.3 else None
    tm = root and r.random() < 0.3
    p["tmpfs_server"] = r.choice([i for i in range(8) if i != p["ns_server"]]) if tm else None
    p["tmpfs_mb"] = r.choice([96, 128, 192])
    p["lib_clients"] = r.choice([1, 2])
    p["shared"] = []
    for lay in LAYOUTS:
        for i in range(r.choice([1, 2])):
            p["shared"].append({"fid": f"sh{len(p['shared'])}", "layout": lay,
                                "path": f"{LAYOUTS[lay]}/shared{i}",
                                "width": r.choice([997, 4096, 10000, 65533, 100003]),
                                "max": r.choice([1 << 20, 3 << 20])})
    kinds = [k for k, _ in FAULT_WEIGHTS
             if not (k == "partition" and p["ns_server"] is None) and not (k == "fill" and not tm)]
    weights = [w for k, w in FAULT_WEIGHTS if k in kinds]
    nf = max(2, min(7, round(a.round_seconds / 15)))
    chosen = [r.choices(kinds, weights)[0] for _ in range(nf)]
    # the case of the issue (a long freeze while writers fsync) in every round,
    # and the round's special server used at least once
    if "stop_long" not in chosen:
        chosen[r.randrange(nf)] = "stop_long"
    for must in ("partition", "fill"):
        if must in kinds and must not in chosen:
            idx = [i for i, k in enumerate(chosen) if k != "stop_long"] or [0]
            chosen[r.choice(idx)] = must
    if chosen.count("kill_client") > 2:
        chosen = [k if k != "kill_client" or i == chosen.index("kill_client") else "stop_short"
                  for i, k in enumerate(chosen)]
    faults = []
    for i, k in enumerate(chosen):
        f = {"kind": k, "gap": r.uniform(2, 6) if i == 0 else r.uniform(0.5, 5), "target": r.randrange(8)}
        if k == "stop_short":
            f["hold"] = r.uniform(0.5, 2)
        elif k == "stop_long":
            f["hold"] = r.uniform(5, 25)
        elif k == "kill_restart":
            f["hold"], f["rebuild"] = r.uniform(0.5, 8), r.random() < 0.5
        elif k == "kill_recovery":
            f["hold"] = r.uniform(0.5, 5)
        elif k == "kill_mds":
            f["hold"] = r.uniform(0.5, 3)
        elif k == "stop_long_recovery":
            f["hold"] = r.uniform(6, 20)
            f["rec_at"], f["rec_down"] = r.uniform(1, f["hold"] - 1), r.uniform(0.5, 4)
        elif k == "partition":
            f["hold"], f["target"] = r.uniform(3, 20), p["ns_server"]
        elif k == "fill":
            f["hold"], f["target"] = r.uniform(3, 12), p["tmpfs_server"]
        elif k == "kill_client":
            f["target"] = r.randrange(2)
        faults.append(f)
    p["faults"] = faults
    p["degraded"] = [sorted(r.sample(range(8), 2)), [r.randrange(8)]]
    plan_slow_disk(seed, rnd, root, p)
    return p


def plan_slow_disk(seed, rnd, root, p):
    """One server's data dir on a slow disk in some rounds, and one fault of
    the round (not the issue's long freeze, nor the round's partition or
    fill) made a slow spell of it, or one more fault when the round has no
    other. Drawn from a stream of its own, so the rest of a seed's plan is
    as it was before slow disks existed."""
    r = random.Random(f"{seed}/{rnd}/slow")
    p["slow_server"] = None
    if not root or r.random() >= 0.3:
        return
    taken = {p["ns_server"], p["tmpfs_server"]}
    p["slow_server"] = r.choice([i for i in range(8) if i not in taken])
    p["slow_us"] = r.choice([20000, 100000, 400000, 1500000])
    idx = [i for i, f in enumerate(p["faults"]) if f["kind"] not in ("stop_long", "partition", "fill")]
    slow = {"kind": "slow", "gap": r.uniform(0.5, 5), "target": p["slow_server"],
            "hold": r.uniform(3, 20), "us": p["slow_us"]}
    if idx:
        i = r.choice(idx)
        slow["gap"] = p["faults"][i]["gap"]
        p["faults"][i] = slow
    else:
        p["faults"].append(slow)


def fault_str(f):
    s = f["kind"]
    if f["kind"] not in ("kill_recovery", "kill_mds"):
        s += f"@{f['target']}"
    if "hold" in f:
        s += f"/{f['hold']:.1f}s"
    if "us" in f:
        s += f"/{f['us'] // 1000}ms-per-io"
    if f.get("rebuild"):
        s += "+rebuild"
    return s


# ------------------------------------------------------------------ clients
class Clients:
    def __init__(self, cl, rnd_seed, jdir, files_json, stop_file, lib_so, mpi=None):
        self.cl, self.seed, self.jdir = cl, rnd_seed, jdir
        self.files, self.stop, self.lib = files_json, stop_file, lib_so
        self.mpi = mpi    # Campaign.mpi: the MPI-IO client's program and MPICH
        self.depfs = os.path.join(cl.bin, "depfs")
        self.procs = {}   # slot -> (Popen, kind)
        self.next_slot = 4
        self.killed = 0
        self.hung = []

    def start(self, slot, kind):
        argv = self.mpiio_argv() if kind == "mpiio" else self.workload_argv(slot, kind)
        out = open(os.path.join(self.jdir, f"client-{slot}.out"), "wb")
        self.procs[slot] = (subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT), kind)
        out.close()

    def workload_argv(self, slot, kind):
        argv = [sys.executable, os.path.join(HERE, "campaign_client.py"), "--slot", str(slot),
                "--journal", os.path.join(self.jdir, f"client-{slot}.jsonl"), "--seed", self.seed,
                "--stop-file", self.stop, "--files", self.files, "--depfs", self.depfs]
        if kind == "lib":
            argv += ["--lib", self.lib, "--conf", self.cl.conf]
        else:
            argv += ["--mnt", self.cl.mnt if kind == "mount" else self.cl.mnt2]
        return argv

    def mpiio_argv(self):
        m = self.mpi
        return [sys.executable, os.path.join(HERE, "campaign_mpiio.py"), "--journal", m["journal"],
                "--seed", self.seed, "--stop-file", self.stop, "--conf", self.cl.conf, "--work", m["work"],
                "--mpich-lib", m["lib"], "--lib", self.lib, "--prog", m["prog"]]

    def kill_client(self, hint):
        """The kill_client fault. With the MPI-IO client running, hint 1
        kills one of its jobs mid-write (SIGUSR1: campaign_mpiio SIGKILLs
        the ranks of the running write job, or of the next one, once they
        have mounted: watch_for_kill); otherwise a libdepfs client,
        mid-write."""
        mpi = [(s, p) for s, (p, k) in sorted(self.procs.items()) if k == "mpiio" and p.poll() is None]
        if mpi and hint % 2 == 1:
            slot, p = mpi[0]
            p.send_signal(signal.SIGUSR1)
            self.killed += 1
            return f"SIGUSR1 to the MPI-IO client in slot {slot} (pid {p.pid}): it SIGKILLs a job mid-write"
        return self.kill_lib_client(hint)

    def kill_lib_client(self, hint):
        live = sorted(s for s, (p, k) in self.procs.items() if k == "lib" and p.poll() is None)
        if not live:
            return "kill_client: no libdepfs client alive"
        slot = live[hint % len(live)]
        p = self.procs[slot][0]
        # mid-write: wait (bounded) until its journal ends with a write intent
        j = os.path.join(self.jdir, f"client-{slot}.jsonl")
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                with open(j, "rb") as f:
                    f.seek(max(0, os.path.getsize(j) - 400))
                    last = f.read().splitlines()[-1]
                if b'"t":"w"' in last:
                    break
            except (OSError, IndexError):
                pass
            time.sleep(0.002)
        p.kill()
        p.wait()
        self.killed += 1
        msg = f"SIGKILL libdepfs client slot {slot} (pid {p.pid})"
        if self.next_slot < 6:
            self.start(self.next_slot, "lib")
            msg += f"; replacement client in slot {self.next_slot}"
            self.next_slot += 1
        return msg

    @staticmethod
    def end(p, kind):
        """Kills a client: the MPI-IO one is asked first (SIGTERM), so that
        it kills its running job, whose processes are not its children."""
        if kind == "mpiio":
            p.terminate()
            try:
                p.wait(timeout=campaign_mpiio.TERM_S)
                return
            except subprocess.TimeoutExpired:
                pass
        p.kill()
        p.wait()

    def kill_all(self):
        for p, k in self.procs.values():
            if p.poll() is None:
                self.end(p, k)

    def stop_all(self):
        open(self.stop, "w").close()
        end = time.monotonic() + CLIENT_STOP_S
        for slot, (p, k) in sorted(self.procs.items()):
            try:
                p.wait(timeout=max(1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.end(p, k)
                self.hung.append(slot)
        return self.hung


# ------------------------------------------------------------------ checks
def run_verify(cl, model_path, via, layouts, what, lib_so):
    """One verify pass in a subprocess (a hung read cannot hang the driver)."""
    argv = [sys.executable, os.path.abspath(__file__), "verify", "--model", model_path, "--via", via,
            "--layouts", ",".join(layouts), "--conf", cl.conf, "--lib", lib_so]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=VERIFY_S)
    except subprocess.TimeoutExpired:
        return {"ok": False, "msg": f"{what}: verify did not finish within {VERIFY_S} s", "bytes": 0, "lost": 0}
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "msg": f"{what}: verify crashed (rc {p.returncode}): {p.stderr.strip()[-800:]}",
                "bytes": 0, "lost": 0}
    res["what"] = what
    return res


def cmd_verify(a):
    """campaign.py verify: reads every modelled file of the given layouts
    through a fresh libdepfs client or a mount; prints one JSON line."""
    with open(a.model, "rb") as f:
        model = pickle.load(f)
    lays = set(a.layouts.split(","))
    fs = None
    if a.via == "lib":
        from depfs_ctypes import Depfs
        fs = Depfs(a.lib, a.conf)

    def read(path):
        if fs:
            return fs.read_file(path)
        with open(a.via + path, "rb") as f:
            return f.read()

    def exists(path):
        if fs:
            try:
                fs.close(fs.open(path))
                return True
            except OSError as e:
                if e.errno == 2:
                    return False
                raise
        return os.path.exists(a.via + path)

    out = {"ok": True, "files": 0, "bytes": 0, "lost": 0, "problems": []}
    for fid in sorted(model.files):
        m = model.files[fid]
        if m.layout not in lays:
            continue
        where = []
        try:
            where = [p for p in m.paths if exists(p)]
        except OSError as e:
            out["problems"].append({"file": m.paths[0], "layout": m.layout, "kind": "error", "msg": str(e)})
            continue
        if m.exists == "no":
            if where:
                out["problems"].append({"file": where[0], "layout": m.layout, "kind": "undead",
                                        "msg": "a removed file is still there"})
            continue
        if not where:
            if m.exists == "maybe" or len(m.paths) > 1 and m.exists == "maybe":
                continue
            out["problems"].append({"file": m.paths[-1], "layout": m.layout, "kind": "missing",
                                    "msg": "the file is gone", "lost": m.acked_bytes()})
            out["lost"] += m.acked_bytes()
            continue
        try:
            got = read(where[0])
        except OSError as e:
            out["problems"].append({"file": where[0], "layout": m.layout, "kind": "error", "msg": str(e)})
            continue
        out["files"] += 1
        bad = m.compare(got)
        out["bytes"] += m.acked_bytes()
        if bad:
            bad.update({"file": where[0], "layout": m.layout})
            out["lost"] += bad.get("lost", 0)
            out["problems"].append(bad)
    if fs:
        fs.unmount()
    out["ok"] = not out["problems"]
    print(json.dumps(out))
    return 0 if out["ok"] else 1


def describe(seed, rnd, res):
    msgs = []
    for b in res.get("problems", []):
        head = f"seed {seed} round {rnd} {res['what']}: file {b['file']} ({b['layout']})"
        k = b["kind"]
        if k == "lost":
            msgs.append(f"LOST: {head} offset {b['offset']}: got byte 0x{b['got']:02x}, want 0x{b['want']:02x} "
                        f"(fsync-acknowledged); {b['run']} wrong acknowledged bytes from there"
                        f"{', all zeros' if b.get('zeros') else ''}; {b['lost']} wrong acknowledged bytes in the file")
        elif k == "neither":
            msgs.append(f"WRONG: {head} offset {b['offset']}: got byte 0x{b['got']:02x}, which is neither the old "
                        f"byte nor one an interrupted write carried ({', '.join('0x%02x' % x for x in b['want'])})")
        elif k == "size":
            msgs.append(f"SIZE: {head}: size {b['size']}, want {b['lo']}..{b['hi']} "
                        f"({b['lost']} acknowledged bytes beyond the end)")
        else:
            msgs.append(f"{k.upper()}: {head}: {b['msg']}")
    if res.get("msg"):
        msgs.append(f"FAILED: seed {seed} round {rnd} {res['msg']}")
    return msgs


# ------------------------------------------------------------------ rounds
class Campaign:
    def __init__(self, a):
        self.a = a
        self.seed = a.seed
        self.lib_so = os.path.join(os.path.dirname(a.bin_dir.rstrip("/")), "lib", "libdepfs.so")
        self.totals = {"rounds": 0, "faults": {}, "bytes_verified": 0, "lost": 0, "failed_rounds": [],
                       "hung_clients": 0, "migrates": [0, 0], "mpiio_files": 0}
        self.failures = []
        self.t0 = time.monotonic()
        self.mpi = self.mpiio_setup()

    def mpiio_setup(self):
        """The MPI-IO client's MPICH (libmpich with the driver) and program,
        compiled here from tests/mpiio/mpiio_bench.c; None (said) without."""
        a = self.a
        if a.mpich_lib == "none":
            say("MPI-IO client: none (--mpich-lib none)")
            return None
        lib = os.path.abspath(a.mpich_lib or os.path.join(os.path.dirname(a.bin_dir.rstrip("/")), "mpich", "lib"))
        why = None
        if not os.path.exists(os.path.join(lib, "libmpich.so.12")):
            why = f"no libmpich.so.12 with the driver in {lib} (client/adio/build-mpich.sh)"
        elif not (shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich")):
            why = "mpicc.mpich / mpiexec.mpich not installed"
        prog = os.path.join(a.state, "mpiio_bench")
        if why is None:
            src = os.path.join(TOP, "tests", "mpiio", "mpiio_bench.c")
            p = subprocess.run(["mpicc.mpich", "-O2", "-o", prog, src], capture_output=True, text=True,
                               timeout=MPICC_S)
            if p.returncode != 0:
                why = f"mpicc.mpich failed: {p.stderr.strip()[-300:]}"
        if why is not None:
            say(f"MPI-IO client: none ({why})")
            return None
        say(f"MPI-IO client: 2-rank jobs through the driver in {lib}")
        return {"lib": lib, "prog": prog}

    def run(self):
        t0 = self.t0 = time.monotonic()
        root = os.geteuid() == 0
        if not root:
            say("not root: no network namespace or tmpfs rounds")
        for rnd in range(1, self.a.rounds + 1):
            if self.a.max_minutes and time.monotonic() - t0 > self.a.max_minutes * 60:
                say(f"--max-minutes {self.a.max_minutes} reached after {rnd - 1} rounds")
                break
            ok = self.round(rnd, plan_round(self.seed, rnd, self.a, root))
            self.totals["rounds"] += 1
            if not ok:
                self.totals["failed_rounds"].append(rnd)
                if not self.a.keep_going:
                    break
        self.summary(time.monotonic() - self.t0)
        return 1 if self.totals["failed_rounds"] or self.totals["lost"] else 0

    def fail(self, rnd, msg):
        say(msg)
        self.failures.append(msg)
        self.round_ok = False

    def round(self, rnd, plan):
        a = self.a
        state = os.path.join(a.state, f"r{rnd}")
        if os.path.exists(state):
            shutil.rmtree(state)
        say(f"==== seed {self.seed} round {rnd}: ns_server={plan['ns_server']} tmpfs_server={plan['tmpfs_server']}"
            f" slow_server={plan['slow_server']}"
            f" lib_clients={plan['lib_clients']} faults: {' '.join(fault_str(f) for f in plan['faults'])}")
        cl = Cluster(TOP, state, a.base_port, a.bin_dir, say)
        self.round_ok = True
        t_round = time.monotonic()
        self.inj = self.clients = self.round_mpi = None
        try:
            cl.up(ns_server=plan["ns_server"], tmpfs_server=plan["tmpfs_server"], tmpfs_mb=plan["tmpfs_mb"],
                  slow_server=plan["slow_server"], slow_us=plan.get("slow_us", 0))
            ok, line = cl.wait_healthy(60)
            if not ok:
                raise ClusterError(f"a fresh cluster is not healthy after 60 s: {line}")
            self.workload_and_faults(rnd, plan, cl, state)
            self.checks(rnd, plan, cl, state)
        except (ClusterError, subprocess.TimeoutExpired, OSError) as e:
            self.fail(rnd, f"FAILED: seed {self.seed} round {rnd}: cluster control: {e}")
        finally:
            if self.clients:
                self.clients.kill_all()
            if self.inj:
                self.inj.heal()
            cl.down(keep_tmpfs=not self.round_ok)
            if self.round_ok and not a.keep_state:
                shutil.rmtree(state, ignore_errors=True)
            elif not self.round_ok:
                say(f"round {rnd}: state, logs and journals kept in {state}")
        say(f"==== round {rnd} {'passed' if self.round_ok else 'FAILED'} in {time.monotonic() - t_round:.0f} s")
        return self.round_ok

    def workload_and_faults(self, rnd, plan, cl, state):
        for lay, d in LAYOUTS.items():
            os.mkdir(cl.mnt + d)
            os.setxattr(cl.mnt + d, "user.depfs.layout", lay.encode())
        for s in plan["shared"]:
            os.close(os.open(cl.mnt + s["path"], os.O_CREAT | os.O_RDWR, 0o644))
            got = os.getxattr(cl.mnt + s["path"], "user.depfs.layout").decode()
            if not got.startswith(s["layout"]):
                raise ClusterError(f"{s['path']} has layout {got}, not {s['layout']}")
        jdir = os.path.join(state, "journal")
        os.makedirs(jdir)
        files_json = os.path.join(jdir, "files.json")
        with open(files_json, "w") as f:
            json.dump({"shared": plan["shared"], "dirs": LAYOUTS,
                       "stream_layouts": ["8@6", "8@6", "8@6", "4@2", "8@7"]}, f)
        self.jdir = jdir
        mpi = None
        if self.mpi:
            mpi = dict(self.mpi, journal=os.path.join(jdir, "mpiio.journal"), work=os.path.join(state, "mpiio"))
        self.round_mpi = mpi
        clients = Clients(cl, f"{self.seed}/{rnd}", jdir, files_json, os.path.join(state, "stop"), self.lib_so,
                          mpi)
        self.clients = clients
        clients.start(0, "mount")
        clients.start(1, "mount2")
        for i in range(plan["lib_clients"]):
            clients.start(2 + i, "lib")
        if mpi:
            clients.start(MPIIO_SLOT, "mpiio")
        t0 = time.monotonic()
        inj = Injector(cl, rnd, say, clients, settle_s=SETTLE_S)
        self.inj = inj
        try:
            inj.run(plan["faults"], deadline=t0 + 3 * self.a.round_seconds + 60)
        finally:
            inj.heal()
        for p in inj.problems:
            self.fail(rnd, f"FAILED: seed {self.seed} round {rnd}: {p}")
        for k, n in inj.counts.items():
            self.totals["faults"][k] = self.totals["faults"].get(k, 0) + n
        rest = self.a.round_seconds - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)
        hung = clients.stop_all()
        say(f"round {rnd}: workload ran {time.monotonic() - t0:.0f} s; "
            f"{sum(1 for _ in clients.procs)} clients, {clients.killed} killed"
            + (f"; slots {hung} did not stop within {CLIENT_STOP_S} s and were killed" if hung else ""))
        self.totals["hung_clients"] += len(hung)
        for slot in sorted(clients.procs):
            with open(os.path.join(jdir, f"client-{slot}.out"), "rb") as f:
                tail = f.read().decode(errors="replace").strip().splitlines()[-1:]
            say(f"  client {slot} ({clients.procs[slot][1]}): {tail[0] if tail else '(no output: killed)'}")

    def checks(self, rnd, plan, cl, state):
        seed = self.seed
        # (f) every daemon alive after the faults (each fault restarted what it killed)
        dead = [n for n in cl.names() if not cl.alive(n)]
        for n in dead:
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: daemon {n} is dead after the workload "
                           f"(see {state}/logs/{n}.log)")
            try:
                cl.restart(n, rebuild=n.startswith("ioserver-"))
            except ClusterError as e:
                self.fail(rnd, f"FAILED: seed {seed} round {rnd}: cannot restart {n}: {e}")
        # (e) every server up, nothing rebuilding
        ok, line = cl.wait_healthy(HEAL_S)
        say(f"round {rnd} {time.strftime('%H:%M:%S')}: after healing: {line}")
        if not ok:
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: not every server up / rebuilt within {HEAL_S} s: {line}")
            return
        tm = time.monotonic()
        model = Model()  # the shared files exist from the start
        for s in plan["shared"]:
            model.add_shared(s["fid"], s["path"], s["layout"], s["width"])
        model.build(self.jdir)
        for w in model.warnings[:5]:
            say(f"model warning: {w}")
        mpath = os.path.join(state, "model.pickle")
        with open(mpath, "wb") as f:
            pickle.dump(model, f)
        for i in range(2):
            self.totals["migrates"][i] += model.migrates[i]
        acked = sum(m.acked_bytes() for m in model.files.values() if m.exists != "no")
        unc = sum(m.uncertain_ops for m in model.files.values())
        say(f"round {rnd}: model: {len(model.files)} files, {acked} acknowledged bytes, "
            f"{unc} interrupted operations (their bytes may be old or new), migrates {model.migrates[0]} done "
            f"and {model.migrates[1]} refused or cut off; built in {time.monotonic() - tm:.0f} s")
        all_lays = list(LAYOUTS)
        # (a) healthy reads
        self.verify(rnd, cl, mpath, [("lib", "libdepfs"), (cl.mnt, "mount")], all_lays, "healthy")
        self.verify_mpiio(rnd, cl, all_lays, "healthy")
        # (b) degraded reads: n-k servers of each layout group killed
        for grp, victims in zip(DEGRADED_GROUPS, plan["degraded"]):
            if grp == ("8@6", "4@2"):
                victims = self.best_pair(cl, model, victims)
            say(f"round {rnd} {time.strftime('%H:%M:%S')}: degraded read of {'+'.join(grp)} "
                f"with servers {victims} killed")
            for v in victims:
                cl.kill(f"ioserver-{v}")
            self.verify(rnd, cl, mpath, [("lib", "libdepfs"), (cl.mnt2, "mount2")], list(grp),
                        f"degraded(-{','.join(map(str, victims))})")
            self.verify_mpiio(rnd, cl, list(grp), f"degraded(-{','.join(map(str, victims))})")
            for v in victims:
                cl.restart(f"ioserver-{v}", rebuild=True)
            ok, line = cl.wait_healthy(HEAL_S)
            if not ok:
                self.fail(rnd, f"FAILED: seed {seed} round {rnd}: after the degraded read, servers {victims} "
                               f"restarted with --rebuild are not all up within {HEAL_S} s: {line}")
                return
            # a client that saw these servers fail keeps them out for
            # server_down_expiry_ms unless the MDS shows them back first
            # (recovery/README.md): the next group's check starts after that
            time.sleep(CLIENT_MARK_EXPIRY_S)
        # (c) scrub
        p = cl.depfs("scrub", "--all", "--json", timeout=600)
        try:
            sm = json.loads(p.stdout)["summary"]
        except (ValueError, KeyError):
            sm = None
        if p.returncode != 0 or not sm or sm.get("stripes_bad") or sm.get("stripes_unreadable") or sm.get("errors"):
            bad_files = []
            try:
                bad_files = [f.get("path") for f in json.loads(p.stdout).get("files", [])][:5]
            except ValueError:
                pass
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: scrub --all rc {p.returncode}: {sm} files {bad_files} "
                           f"{p.stderr.strip()[-300:]}")
        else:
            say(f"round {rnd}: scrub clean: {sm['files']} files, {sm['stripes_checked']} stripes")
        # (d) no stripe lock left (orphans get one lease + heartbeat + detection to go)
        bound = 5.0 + 0.5 + 2 * 2.0 + 5
        end = time.monotonic() + bound
        while True:
            st = cl.status()
            held = {s["id"]: s.get("locks_held") for s in st["servers"]} if st else None
            if held is not None and not any(held.values()):
                break
            if time.monotonic() > end:
                self.fail(rnd, f"FAILED: seed {seed} round {rnd}: stripe locks still held {bound:.0f} s after "
                               f"the checks: {held}")
                break
            time.sleep(0.5)
        # (e) again, and (f): daemons alive, logs clean
        ok, line = cl.wait_healthy(30)
        if not ok:
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: not every server up at the end: {line}")
        for n in cl.names():
            if not cl.alive(n):
                self.fail(rnd, f"FAILED: seed {seed} round {rnd}: daemon {n} died during the checks")
        found, _ = cl.log_findings()
        for line in found[:10]:
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: daemon log: {line}")
        for line in cl.serve_order_findings()[:10]:
            self.fail(rnd, f"FAILED: seed {seed} round {rnd}: {line}")

    def best_pair(self, cl, model, default):
        """Two servers that hit the most 4@2 files (8@6 files use all 8)."""
        sets = []
        for m in model.files.values():
            if m.layout == "4@2" and m.exists == "yes" and len(m.paths) == 1:
                p = cl.depfs("layout", "get", m.paths[0], timeout=30)
                if p.returncode == 0 and "servers=" in p.stdout:
                    ids = p.stdout.split("servers=")[1].split()[0]
                    sets.append({int(x) for x in ids.split(",") if x.isdigit()})
        if not sets:
            return default
        best = max(((sum(1 for s in sets if s & {x, y}), (x, y) == tuple(default), (x, y))
                    for x in range(8) for y in range(x + 1, 8)))
        return list(best[2])

    def verify(self, rnd, cl, mpath, vias, layouts, phase):
        for via, name in vias:
            res = run_verify(cl, mpath, via, layouts, f"{phase} read via {name}", self.lib_so)
            self.totals["bytes_verified"] += res.get("bytes", 0)
            self.totals["lost"] += res.get("lost", 0)
            if res.get("ok"):
                say(f"round {rnd} {time.strftime('%H:%M:%S')}: {res['what']}: {res['files']} files, "
                    f"{res['bytes']} acknowledged bytes right")
            else:
                for msg in describe(self.seed, rnd, res)[:12]:
                    self.fail(rnd, msg)

    def verify_mpiio(self, rnd, cl, layouts, phase):
        """(a) for the MPI-IO client's files: every acknowledged one of the
        layouts reads back exactly through the driver; no job hung."""
        m = self.round_mpi
        if not m:
            return
        res = campaign_mpiio.check_acked(m["journal"], layouts, cl.conf, m["work"], m["lib"], self.lib_so,
                                         m["prog"])
        self.totals["bytes_verified"] += res["bytes"]
        if phase == "healthy":
            self.totals["mpiio_files"] += res["files"] + len(res["problems"])
            for path in res["hung"]:
                self.fail(rnd, f"FAILED: seed {self.seed} round {rnd}: an MPI-IO job writing {path} did not "
                               f"end within {campaign_mpiio.JOB_S} s (journal {m['journal']})")
        for msg in res["problems"][:12]:
            self.fail(rnd, f"FAILED: seed {self.seed} round {rnd}: {phase} read via the MPI-IO driver: {msg}")
        if res["files"] and not res["problems"]:  # (none in 8@7: it writes no such file)
            say(f"round {rnd} {time.strftime('%H:%M:%S')}: {phase} read via the MPI-IO driver: {res['files']} "
                f"files, {res['bytes']} acknowledged bytes right")

    def summary(self, secs):
        t = self.totals
        faults = ", ".join(f"{k} {v}" for k, v in sorted(t["faults"].items())) or "none"
        say("==== campaign summary")
        say(f"seed {self.seed}: {t['rounds']} rounds in {secs / 60:.1f} min; faults: {faults} "
            f"(total {sum(t['faults'].values())})")
        say(f"bytes verified: {t['bytes_verified']} (acknowledged bytes x read passes); "
            f"lost acknowledged bytes: {t['lost']}; clients that hung: {t['hung_clients']}; "
            f"migrates: {t['migrates'][0]} done, {t['migrates'][1]} refused or cut off; "
            f"MPI-IO files acknowledged: {t['mpiio_files'] if self.mpi else 'no MPI-IO client'}")
        if t["failed_rounds"]:
            say(f"failed rounds: {t['failed_rounds']}; first failure: {self.failures[0] if self.failures else '?'}")
            say(f"replay: {sys.argv[0]} --seed {self.seed} --rounds {max(t['failed_rounds'])} "
                f"--round-seconds {self.a.round_seconds}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "verify":
        ap = argparse.ArgumentParser()
        ap.add_argument("cmd")
        for o in ("--model", "--via", "--layouts", "--conf", "--lib"):
            ap.add_argument(o, required=True)
        return cmd_verify(ap.parse_args())
    ap = argparse.ArgumentParser(description="randomized, seeded fault campaign (issue 10)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 1000000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--round-seconds", type=float, default=60)
    ap.add_argument("--max-minutes", type=float, default=0)
    ap.add_argument("--keep-going", action="store_true", help="run the remaining rounds after a failed one")
    ap.add_argument("--keep-state", action="store_true", help="keep every round's state dir")
    ap.add_argument("--state", default=os.environ.get("DEPFS_STATE") or f"/tmp/depfs-camp-{os.getpid()}")
    ap.add_argument("--base-port", type=int, default=int(os.environ.get("DEPFS_BASE_PORT", "10000")))
    ap.add_argument("--bin-dir", default=os.environ.get("DEPFS_BIN_DIR") or os.path.join(TOP, "build", "bin"))
    ap.add_argument("--mpich-lib", help="the dir of libmpich with the DePFS driver (default: BIN_DIR/../mpich/lib "
                    "when there is one; none: no MPI-IO client)")
    a = ap.parse_args()
    say(f"campaign: seed {a.seed} (replay with --seed {a.seed}), {a.rounds} rounds of {a.round_seconds:.0f} s, "
        f"state {a.state}, ports from {a.base_port}")
    os.makedirs(a.state, exist_ok=True)
    c = Campaign(a)

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    try:
        return c.run()
    except KeyboardInterrupt as e:
        say(f"campaign interrupted ({e}); seed {a.seed}")
        c.summary(time.monotonic() - c.t0)
        return 1


if __name__ == "__main__":
    sys.exit(main())
