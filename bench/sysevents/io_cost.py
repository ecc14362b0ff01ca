#!/usr/bin/env python3
"""What `record --events io` costs in CPU beside `perf record` of the same
block tracepoints on every CPU (docs/benchmarks.md, "What block I/O
costs"), on a program of 20,000 O_DIRECT requests (directio.c). Each
configuration runs REPS times, interleaved; the CPU of the whole run (the
tool and the program, user + system, from getrusage of the children) is
taken and the median kept:

  program  plain run                                   (baseline of perf's)
  none     callscope record --events none              (baseline of callscope's)
  io       callscope record --events io
  perf     perf record -a -e block:block_io_start -e block:block_rq_complete

Root only (the tracepoints). Also prints how many completions each has:
perf's are those the kernel delivered (none from an idle CPU on some
kernels), callscope's those matched with a request of the program.

    bench/sysevents/io_cost.py [--callscope PATH] [--reps N] [--dir DIR]"""
import argparse
import os
import json
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
    p.add_argument("--dir", default=None, help="where the program's file goes (a disk's file system: not tmpfs)")
    a = p.parse_args()
    work = tempfile.mkdtemp(dir=a.dir)
    prog = os.path.join(work, "directio")
    subprocess.run(["cc", "-O2", "-finstrument-functions", os.path.join(HERE, "directio.c"), "-o", prog], check=True)
    cs = os.path.abspath(a.callscope)
    tr = os.path.join(work, "t.trace")
    pd = os.path.join(work, "p.data")
    configs = {
        "program": [prog, work],
        "none": [cs, "record", "-f", "-o", tr, "--events", "none", "--", prog, work],
        "io": [cs, "record", "-f", "-o", tr, "--events", "io", "--", prog, work],
        "perf": ["perf", "record", "-q", "-a", "-e", "block:block_io_start", "-e", "block:block_rq_complete",
                 "-o", pd, "--", prog, work],
    }
    med = median_cpu(configs, a.reps, work)
    print_medians(med, a.reps)
    ours = med["io"] - med["none"]
    theirs = med["perf"] - med["program"]
    print("cost of the block events: callscope %.3f s, perf record -a %.3f s: %.2fx" %
          (ours, theirs, ours / theirs if theirs > 0 else float("nan")))
    # Completions in the last runs.
    script = subprocess.run(["perf", "script", "-i", pd], capture_output=True, text=True).stdout
    print("perf's last run: %d starts, %d completions" %
          (script.count("block:block_io_start"), script.count("block:block_rq_complete")))
    rows = json.loads(subprocess.run([cs, "report", "--io", "--format", "json", tr], capture_output=True,
                                     text=True).stdout)["rows"]
    unseen = sum(r["count"] for r in rows if "completion not seen" in r["kind"])
    print("callscope's last run: %d requests, %d of them without their completion" %
          (sum(r["count"] for r in rows), unseen))


if __name__ == "__main__":
    main()
