#!/usr/bin/env python3
"""What following the kernel's events costs in CPU, beside the tools a user
would otherwise pick (docs/benchmarks.md, "What the kernel's events cost in
CPU"). Each configuration runs a program REPS times, interleaved; the CPU
of the whole run (the tool and the program, user + system, from
getrusage of the children) is taken, the median kept, and the cost added
per system call or per switch computed against its baseline:

  program  plain run                         (baseline of the others)
  none     callscope record --events none    (baseline of callscope's)
  sched    callscope record --events sched
  sys      callscope record --events sched,syscalls
  trace    perf trace -s                     (syscall summary)
  psched   perf sched record                 (scheduler events)
  strace   strace -c -f                      (reference)
  qsched   callscope query -c, a sched:::off-cpu count (live: issue 33)
  qsys     callscope query -c, a syscall:::entry count by name

    bench/sysevents/cost.py [--callscope PATH] [--reps N]

Needs root (the syscall and sched tracepoints) and perf, strace."""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_of(cmd, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    if "not recorded" in r.stderr:
        sys.exit("the kernel refused some events (run as root): %s" % r.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(configs, reps, cwd):
    """Each command of `configs` (name -> argv) `reps` times, interleaved:
    the median CPU of each name."""
    cpu = {k: [] for k in configs}
    for _ in range(reps):
        for k, cmd in configs.items():
            cpu[k].append(cpu_of(cmd, cwd))
    return {k: statistics.median(v) for k, v in cpu.items()}


def print_medians(med, reps):
    for k, v in med.items():
        print("%-8s %.3f s CPU (median of %d)" % (k, v, reps))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--callscope", default=os.path.join(HERE, "..", "..", "build", "bin", "callscope"))
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    work = tempfile.mkdtemp()
    try:
        progs = {}
        for name, extra in (("syscalls", []), ("pingpong", ["-pthread"])):
            out = os.path.join(work, name)
            subprocess.run(["cc", "-O2", "-finstrument-functions"] + extra + [os.path.join(HERE, name + ".c"), "-o", out],
                           check=True)
            progs[name] = out
        cs = os.path.abspath(a.callscope)
        tr = os.path.join(work, "t.trace")
        configs = {
            "program": lambda prog: [prog],
            "none": lambda prog: [cs, "record", "-f", "-o", tr, "--events", "none", "--", prog],
            "sched": lambda prog: [cs, "record", "-f", "-o", tr, "--events", "sched", "--", prog],
            "sys": lambda prog: [cs, "record", "-f", "-o", tr, "--events", "sched,syscalls", "--", prog],
            "trace": lambda prog: ["perf", "trace", "-s", "-o", os.path.join(work, "perf.txt"), "--", prog],
            "psched": lambda prog: ["perf", "sched", "record", "-q", "-o", os.path.join(work, "perf.data"), "--", prog],
            "strace": lambda prog: ["strace", "-c", "-f", "-o", os.path.join(work, "strace.txt"), prog],
            # A live query answers from the same events: it should cost
            # what recording them costs.
            "qsched": lambda prog: [cs, "query", "-q", "-n", "sched:::off-cpu { @[probename] = count(); }", "-c", prog],
            "qsys": lambda prog: [cs, "query", "-q", "-n", "syscall:::entry { @[probefunc] = count(); }", "-c", prog],
        }
        for name, prog in progs.items():
            med = median_cpu({c: cmd(prog) for c, cmd in configs.items()}, a.reps, work)
            # Events per run: system calls of the program, switches of pingpong.
            events = 200_000 if name == "syscalls" else 40_000
            unit, units = ("system call", "system calls") if name == "syscalls" else ("switch", "switches")
            print("%s (%d %s per run), median CPU of %d runs, and the cost added per %s:" %
                  (name, events, units, a.reps, unit))
            for c in configs:
                ours = c in ("sched", "sys", "qsched", "qsys")
                base = med["none"] if ours else med["program"]
                added = "" if c in ("program", "none") else "  +%.0f ns per %s (over %s)" % (
                    (med[c] - base) * 1e9 / events, unit, "record --events none" if ours else "the program")
                print("  %-8s %.3f s%s" % (c, med[c], added))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
