#!/usr/bin/env python3
"""What `record --sample 999` costs in CPU beside `perf record -F 999 -g`
(docs/benchmarks.md, "What CPU samples cost"), on a CPU-bound program of
fixed work (sampled.c). Each configuration runs REPS times, interleaved; the
CPU of the whole run (the tool and the program, user + system, from
getrusage of the children) is taken and the median kept:

  program  plain run                                  (baseline of perf's)
  none     callscope record --events none             (baseline of callscope's)
  sample   callscope record --events none --sample 999
  perf     perf record -F 999 -g -e cpu-clock

and, built without hooks (the samples' call paths unwound from the stack,
trace 1.13), beside perf's own unwinding by the same rules, whose CPU is
in `perf report` as much as in `perf record`:

  unhooked      plain run
  unhooked_cs   callscope record --events none --sample 999
  dwarf         perf record -F 999 --call-graph dwarf -e cpu-clock
  dwarf_report  perf report --children of that data (counted apart)

    bench/sysevents/sample_cost.py [--callscope PATH] [--reps N]"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cost import median_cpu, print_medians  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--callscope", default=os.path.join(HERE, "..", "..", "build", "bin", "callscope"))
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    work = tempfile.mkdtemp()
    prog = os.path.join(work, "sampled")
    subprocess.run(["cc", "-O2", "-finstrument-functions", os.path.join(HERE, "sampled.c"), "-o", prog], check=True)
    plain = os.path.join(work, "sampled_unhooked")
    subprocess.run(["cc", "-O2", "-g", os.path.join(HERE, "sampled.c"), "-o", plain], check=True)
    dwarf = os.path.join(work, "d.data")
    cs = os.path.abspath(a.callscope)
    tr = os.path.join(work, "t.trace")
    configs = {
        "program": [prog],
        "none": [cs, "record", "-f", "-o", tr, "--events", "none", "--", prog],
        "sample": [cs, "record", "-f", "-o", tr, "--events", "none", "--sample", "999", "--", prog],
        "perf": ["perf", "record", "-q", "-F", "999", "-g", "-e", "cpu-clock", "-o", os.path.join(work, "p.data"),
                 "--", prog],
        "unhooked": [plain],
        "unhooked_cs": [cs, "record", "-f", "-o", tr, "--events", "none", "--sample", "999", "--", plain],
        "dwarf": ["perf", "record", "-q", "-F", "999", "--call-graph", "dwarf", "-e", "cpu-clock", "-o", dwarf,
                  "--", plain],
        "dwarf_report": ["perf", "report", "-i", dwarf, "--children", "--stdio", "--sort", "sym", "-q"],
    }
    med = median_cpu(configs, a.reps, work)
    print_medians(med, a.reps)
    ours = med["sample"] - med["none"]
    theirs = med["perf"] - med["program"]
    print("cost of the samples: callscope %.3f s, perf record -F 999 -g %.3f s: %.2fx" %
          (ours, theirs, ours / theirs if theirs > 0 else float("nan")))
    ours = med["unhooked_cs"] - med["unhooked"]
    theirs = med["dwarf"] - med["unhooked"]
    print("unwound from the stack: callscope %.3f s (recording and unwinding), perf record --call-graph dwarf "
          "%.3f s + perf report %.3f s = %.3f s: %.2fx; %.2fx of perf record alone" %
          (ours, theirs, med["dwarf_report"], theirs + med["dwarf_report"],
           ours / (theirs + med["dwarf_report"]), ours / theirs if theirs > 0 else float("nan")))


if __name__ == "__main__":
    main()
