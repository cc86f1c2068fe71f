#!/usr/bin/env python3
"""campaign_mpiio.py - the fault campaign's MPI-IO client and its check
(campaign.py uses both when MPICH with the DePFS ROMIO driver is built).

  campaign_mpiio.py --journal F --seed S --stop-file P --conf C --work DIR
                    --mpich-lib DIR --lib SO --prog MPIIO_BENCH

Until the stop file exists it runs 2-rank jobs of tests/mpiio/mpiio_bench
(at most MAX_FILES, and more only while a kill is asked; a pause between
two) through the driver (no mount in the path), each writing a fresh file
in one of the campaign's layout directories with one of three patterns:
  small  1000-byte records interleaved across the ranks, independent
         calls, the stripe gather on: MPI_File_sync hands each rank's
         partial stripes to one owner (depfs_flush_hand_partial,
         depfs_write_pieces);
  hard   IO500 ior-hard's 47008-byte records, the same way;
  coll   1 MiB collective calls, N-1 strided, 4 MiB.
A job that exits 0 and prints PASS had every write, its MPI_File_sync and
its close succeed: its file is acknowledged and gets a line in the
journal (one JSON object per line; not a .jsonl file: campaign_model
replays those). A failed job is journaled too, and its file is not
checked. SIGUSR1 (the campaign's kill_client fault) asks for a kill: the
running write job, or else the next one, is SIGKILLed KILL_DELAY_S after
its ranks have mounted (into its writes), unless it ends first (then the
next one is): its ranks die holding stripe locks and gathered pieces,
which depfs-recovery's orphan repair must resolve (the campaign's scrub
and lock checks); it is journaled as killed. Every job is bounded
(JOB_S); one that outlives it is killed and counted as hung, which fails
the round: within the faults the campaign injects, a job must end.

check_acked (called by campaign.py after the workload) reads every
acknowledged file of the given layouts back with the same program and
pattern, which checks every byte."""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

NP = 2
JOB_S = 75            # bound: one job, write or read (a long stop of a server is ~17 s)
PAUSE_S = (0.5, 1.5)  # between two jobs (a job takes ~0.1 s here): the faults meet them spread out
MAX_FILES = 16        # files written per round at most: with the workload's, they fit the rounds'
                      # smallest tmpfs data dir (96 MiB) once the fill fault is healed
TERM_S = 10           # bound: SIGTERM to the client gone, its job killed
KILL_DELAY_S = (0.0, 0.05)  # an asked kill: this long after the job's ranks mounted
KILL_POLL_S = 0.002   # how often a write job is looked at for an asked kill
MOUNTED = b"libdepfs: mounted "  # each rank's line once it mounted (client/lib/api_mount.c)
PATTERNS = {
    "small": ["-xferb", "1000", "-segments", "256", "-indep", "-hint", "depfs_stripe_gather=enable"],
    "hard": ["-xferb", "47008", "-segments", "32", "-indep", "-hint", "depfs_stripe_gather=enable"],
    "coll": ["-mib", "4", "-xfer", "1"],
}
PATTERN_BYTES = {"small": 1000 * 256 * NP, "hard": 47008 * 32 * NP, "coll": 4 << 20}
LAYOUT_DIRS = {"8@6": "/L8_6", "4@2": "/L4_2"}  # campaign.LAYOUTS, the two that take a label here


def job_env(conf, work, mpich_lib, lib_so):
    """The driver's environment: the cluster, a lock dir of the round's own,
    and the campaign's libdepfs (libmpich's RUNPATH names the copy the
    driver was built with; LD_LIBRARY_PATH comes first)."""
    libdir = os.path.join(work, "lib")
    os.makedirs(libdir, exist_ok=True)
    link = os.path.join(libdir, "libdepfs.so.0")
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(lib_so), link)
    env = dict(os.environ)
    env.update({"DEPFS_CONF": conf, "DEPFS_MPIIO_LOCK_DIR": os.path.join(work, "locks"),
                "LD_LIBRARY_PATH": f"{libdir}:{mpich_lib}"})
    return env


RUNNING = []          # the job in progress: SIGTERM kills its process group
KILL = {"asked": False}  # SIGUSR1: kill a write job (watch_for_kill)


def on_term(_signum, _frame):
    for p in RUNNING:
        os.killpg(p.pid, signal.SIGKILL)
    os._exit(1)


def on_kill(_signum, _frame):
    KILL["asked"] = True


def watch_for_kill(p, out_path, rng, t_end):
    """Until p ends: once a kill is asked and every rank of p has said it
    mounted (its writes begin), SIGKILL p's process group a random
    KILL_DELAY_S later, unless it ended first. True when it was killed."""
    with open(out_path, "rb") as f:
        while p.poll() is None and time.monotonic() < t_end:
            time.sleep(KILL_POLL_S)
            if not KILL["asked"]:
                continue
            f.seek(0)
            if f.read().count(MOUNTED) < NP:
                continue
            time.sleep(rng.uniform(*KILL_DELAY_S))
            if p.poll() is not None:
                return False  # ended first: the kill waits for the next job
            KILL["asked"] = False
            os.killpg(p.pid, signal.SIGKILL)
            return True
    return False


def run_job(prog, op, fname, pattern, env, bound_s, kill_rng=None):
    """(exit code, output, hung, killed): one bounded mpiexec of the
    program, in a process group of its own (mpiexec's proxies and the ranks
    with it). With kill_rng, an asked kill may end it (watch_for_kill)."""
    argv = ["mpiexec.mpich", "-n", str(NP), prog, "-fname", fname, "-op", op] + PATTERNS[pattern]
    with tempfile.NamedTemporaryFile(prefix="campaign-mpiio-") as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        RUNNING.append(p)
        hung = killed = False
        try:
            t_end = time.monotonic() + bound_s
            if kill_rng is not None:
                killed = watch_for_kill(p, out.name, kill_rng, t_end)
            try:
                p.wait(timeout=max(0.0, t_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                hung = True
            with open(out.name, "rb") as f:
                text = f.read().decode(errors="replace")
            return p.returncode, text, hung, killed
        finally:
            RUNNING.remove(p)


def tail(text, n=3):
    return " | ".join(text.strip().splitlines()[-n:])


def client(a):
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, on_kill)
    rng = random.Random(f"{a.seed}/mpiio")
    kill_rng = random.Random(f"{a.seed}/mpiio/kill")
    env = job_env(a.conf, a.work, a.mpich_lib, a.lib)
    counts = {"jobs": 0, "acked": 0, "failed": 0, "killed": 0, "hung": 0}
    with open(a.journal, "a", buffering=1) as j:
        i = 0
        while not os.path.exists(a.stop_file):
            time.sleep(rng.uniform(*PAUSE_S))
            if os.path.exists(a.stop_file) or (i >= MAX_FILES and not KILL["asked"]):
                continue  # past the cap, jobs only while a kill is asked
            pattern = rng.choice(sorted(PATTERNS))
            layout = rng.choice(sorted(LAYOUT_DIRS))
            path = f"{LAYOUT_DIRS[layout]}/mpi.{i}"
            rec = {"i": i, "path": path, "layout": layout, "pattern": pattern}
            t0 = time.monotonic()
            rc, out, hung, killed = run_job(a.prog, "write", f"depfs@{layout}:{path}", pattern, env,
                                            JOB_S, kill_rng)
            ok = rc == 0 and "PASS" in out and not hung and not killed
            t = "ack" if ok else "killed" if killed else "fail"
            rec.update({"t": t, "rc": rc, "hung": hung, "secs": round(time.monotonic() - t0, 2)})
            if not ok:
                rec["tail"] = tail(out)
            j.write(json.dumps(rec) + "\n")
            counts["jobs"] += 1
            counts["acked" if ok else "killed" if killed else "failed"] += 1
            counts["hung"] += hung
            i += 1
    print(f"mpiio client: {counts['jobs']} jobs, {counts['acked']} acknowledged, "
          f"{counts['failed']} failed, {counts['killed']} killed mid-write, {counts['hung']} hung",
          flush=True)
    return 0


def journal_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def check_acked(journal, layouts, conf, work, mpich_lib, lib_so, prog):
    """Reads back every acknowledged file of the layouts: a dict with files,
    bytes, problems (one message per file that failed), hung (jobs of the
    client that outlived JOB_S)."""
    env = job_env(conf, work, mpich_lib, lib_so)
    recs = journal_records(journal)
    res = {"files": 0, "bytes": 0, "problems": [],
           "hung": [r["path"] for r in recs if r.get("hung")]}
    for r in recs:
        if r["t"] != "ack" or r["layout"] not in layouts:
            continue
        fname = f"depfs@{r['layout']}:{r['path']}"
        rc, out, hung, _ = run_job(prog, "read", fname, r["pattern"], env, JOB_S)
        if rc == 0 and "PASS" in out and not hung:
            res["files"] += 1
            res["bytes"] += PATTERN_BYTES[r["pattern"]]
        else:
            res["problems"].append(f"{r['path']} ({r['layout']}, {r['pattern']}, acknowledged): "
                                   f"read back rc {rc}{' (hung)' if hung else ''}: {tail(out)}")
    return res


def main():
    ap = argparse.ArgumentParser(description="the fault campaign's MPI-IO client")
    for o in ("--journal", "--seed", "--stop-file", "--conf", "--work", "--mpich-lib", "--lib", "--prog"):
        ap.add_argument(o, required=True)
    return client(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
