#!/usr/bin/env python3
"""check_layers.py OBJDIR - the call rules of client/lib (docs/ARCHITECTURE.md),
checked on the built objects with nm: a file calls only files of its own
layer or of lower ones, and no two files call each other. Layers, from the
top: recover_ (recovery operations), api_ (entry points), eng_ (engines),
io_ (the request fan-out), core_ (core). Prints every violation; exit 1 on
any, 0 otherwise."""
import glob
import os
import subprocess
import sys

RANKS = {"recover": 5, "api": 4, "eng": 3, "io": 2, "core": 1}


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    return defined, undefined


def main():
    objdir = sys.argv[1]
    files = {}
    for obj in sorted(glob.glob(os.path.join(objdir, "*.o"))):
        name = os.path.basename(obj)[:-2]
        files[name] = symbols(obj)
    bad = []
    for name in files:
        prefix = name.split("_", 1)[0]
        if prefix not in RANKS:
            bad.append(f"{name}.c: no layer prefix ({', '.join(p + '_' for p in RANKS)})")
    calls = {}
    for a, (_, undef) in files.items():
        for b, (defs, _) in files.items():
            if a != b and undef & defs:
                calls[(a, b)] = sorted(undef & defs)
    for (a, b), syms in sorted(calls.items()):
        ra = RANKS.get(a.split("_", 1)[0], 0)
        rb = RANKS.get(b.split("_", 1)[0], 0)
        if ra < rb:
            bad.append(f"{a}.c calls up into {b}.c: {', '.join(syms)}")
        elif (b, a) in calls and a < b:
            bad.append(f"{a}.c and {b}.c call each other: {', '.join(syms)} / "
                       f"{', '.join(calls[(b, a)])}")
    for line in bad:
        print(line)
    print(f"layers: {len(files)} files, {len(calls)} file-to-file calls, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
