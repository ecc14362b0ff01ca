#!/usr/bin/env python3
"""Compares `callscope stack` frame sizes with gcc's -fstack-usage (.su files).

usage: agreement.py CALLSCOPE BINARY SU_DIR [--show N]

Every .su line under SU_DIR ('file:line:col:name<TAB>bytes<TAB>kind') is one
function. A function agrees when callscope lists a function declared at that
file and line (or, without debug information, of that name) with the same
byte count, and flags it dynamic exactly when gcc says
'dynamic' (unbounded; 'dynamic,bounded' is a figure gcc counted in full). Prints the agreement and the first disagreements.
"""
import csv
import re
import io
import os
import subprocess
import sys


SU_LINE = re.compile(r"^(.*?):(\d+):(\d+):(.*)$")


def read_su(su_dir):
    out = []
    for root, _, files in os.walk(su_dir):
        for name in files:
            if not name.endswith(".su"):
                continue
            with open(os.path.join(root, name)) as f:
                for line in f:
                    parts = line.rstrip("\n").split("\t")
                    m = SU_LINE.match(parts[0]) if len(parts) == 3 else None
                    if m is None:
                        continue
                    out.append((os.path.basename(m.group(1)), int(m.group(2)), m.group(4),
                                int(parts[1]), parts[2]))
    return out


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    callscope, binary, su_dir = sys.argv[1:4]
    show = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--show" else 10
    p = subprocess.run([callscope, "stack", binary, "--format", "csv"], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return 1
    by_loc, by_name = {}, {}
    for r in csv.DictReader(io.StringIO(p.stdout)):
        by_name.setdefault(r["function"], []).append(r)
        if r.get("file") and r.get("line"):
            by_loc.setdefault((os.path.basename(r["file"]), int(r["line"])), []).append(r)
    su = read_su(su_dir)
    agree, missing, wrong = 0, [], []
    for file, line, fn, size, kind in su:
        # 'dynamic,bounded': gcc counted the varying part (arguments pushed for
        # a call); callscope counts it too and does not flag it.
        dyn = kind == "dynamic"
        # By declaration (file:line) when the binary has debug information;
        # a template's instances share one line: one of them must agree.
        cands = by_loc.get((file, line)) or by_name.get(fn, [])
        if not cands:
            missing.append("%s:%d %s" % (file, line, fn))
            continue
        if any(int(r["frame_bytes"]) == size and (r["dynamic"] == "true") == dyn for r in cands):
            agree += 1
            continue
        r = cands[0]
        wrong.append("%s:%d %s: callscope %s%s (%s), gcc %d %s" % (
            file, line, fn, r["frame_bytes"], " dynamic" if r["dynamic"] == "true" else "",
            r["source"], size, kind))
    total = len(su)
    print("%s: %d of %d functions agree (%.1f%%), %d differ; %d .su lines matched to no function "
          "(no declaration line in the debug information, and named differently: implicit "
          "members of local classes, static initialisers, module_init/module_exit aliases)" % (
              os.path.basename(binary), agree, total - len(missing),
              100.0 * agree / max(1, total - len(missing)), len(wrong), len(missing)))
    for w in wrong[:show]:
        print("  differs: " + w)
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
