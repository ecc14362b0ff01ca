#!/usr/bin/env python3
"""Runs and measures of bench/realprog/run.sh (which builds the programs).

The recorder's own CPU is utime+stime of the `callscope record` (or
`uftrace record`) process itself, not of its children: read from
/proc/PID/stat while it runs (at each phase's edges) and, for the whole run,
from its zombie (waitid(WNOWAIT): the process has ended but is not reaped,
so its own times and its children's -- cutime/cstime, the program -- are
still apart).
"""
import argparse
import glob
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print("[realprog]", *a, file=sys.stderr, flush=True)


# --- /proc -------------------------------------------------------------------
def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rindex(")") + 2:].split()  # fields from 3 (state) on


def cpu_self(pid):
    """utime+stime of the process (all its threads, living and dead), s."""
    f = stat_fields(pid)
    return (int(f[11]) + int(f[12])) / TICK


def cpu_children(pid):
    f = stat_fields(pid)
    return (int(f[13]) + int(f[14])) / TICK


def cpu_ns(pid):
    """Time on CPU of the living threads, from schedstat (ns precision), s."""
    t = 0
    for p in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(p) as f:
                t += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return t / 1e9


def ctxt(pid):
    """voluntary + nonvoluntary context switches of the living threads."""
    n = 0
    for p in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(p) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                        n += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return n


def nthreads(pid):
    return len(glob.glob(f"/proc/{pid}/task/*"))


def children(pid):
    out = []
    for p in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(p) as f:
                out += [int(x) for x in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        c = children(todo.pop())
        out += c
        todo += c
    return out


def tree_cpu(pids):
    t = 0.0
    for p in pids:
        try:
            t += cpu_self(p)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return t


def wait_zombie(proc, timeout):
    """Wait for proc to end without reaping it; return its own and its
    children's CPU (s), then reap it. Returns (self, children, returncode)."""
    deadline = time.time() + timeout
    while True:
        r = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        if r is not None and r.si_pid == proc.pid:
            break
        if time.time() > deadline:
            raise TimeoutError(f"pid {proc.pid} did not end in {timeout} s")
        time.sleep(0.02)
    s, c = cpu_self(proc.pid), cpu_children(proc.pid)
    rc = proc.wait()
    return s, c, rc


# --- helpers -------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


CALLS_RE = re.compile(r"callscope (?:record|query): (\d+) calls in")
WAITED_RE = re.compile(r"the program waited ([0-9.]+) s in all")


def callscope_calls(stderr_text):
    m = CALLS_RE.search(stderr_text)
    return int(m.group(1)) if m else None


def uftrace_calls(d):
    """Sum of the Calls column of `uftrace report`."""
    out = subprocess.run(["uftrace", "report", "-d", d, "--no-pager", "-f", "call"],
                         capture_output=True, text=True, check=True).stdout
    n = 0
    for line in out.splitlines():
        f = line.split()
        if f and f[0].isdigit():
            n += int(f[0])
    return n


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    t = 0
    for r, _, fs in os.walk(path):
        for f in fs:
            t += os.path.getsize(os.path.join(r, f))
    return t


def recorder_cmd(cfg, a, work, name):
    """Prefix and output for a configuration (trace path or uftrace dir)."""
    if cfg == "callscope-record":
        out = f"{work}/{name}.trace"
        return [a.callscope, "record", "-f", "-o", out, "--raw-dir", work, "--"], out
    if cfg == "callscope-record-noevents":
        # record without the kernel's context switches: what following them costs
        out = f"{work}/{name}.noevents.trace"
        return [a.callscope, "record", "--events", "none", "-f", "-o", out, "--raw-dir", work, "--"], out
    if cfg == "callscope-profile":
        out = f"{work}/{name}.profile.trace"
        return [a.callscope, "record", "--mode=profile", "-f", "-o", out, "--raw-dir", work, "--"], out
    if cfg == "callscope-libcalls":
        # The uninstrumented build: its calls into shared libraries (GOT stubs).
        out = f"{work}/{name}.libcalls.trace"
        return [a.callscope, "record", "--libcalls", "-f", "-o", out, "--raw-dir", work, "--"], out
    if cfg == "callscope-memory":
        # The instrumented build, every allocation and free beside the calls.
        out = f"{work}/{name}.memory.trace"
        return [a.callscope, "record", "--memory", "-f", "-o", out, "--raw-dir", work, "--"], out
    if cfg == "callscope-query":
        # A live one-function D query (query -c): the program's command is
        # one string, appended by the caller; the trace kept (-o) holds only
        # that function's calls.
        out = f"{work}/{name}.query.trace"
        return [a.callscope, "query", "-n", "pid$target::ngx_http_process_request:entry { @ = count(); }",
                "-o", out, "--raw-dir", work, "-c"], out
    if cfg == "uftrace":
        out = f"{work}/{name}.uftrace.data"
        return ["uftrace", "record", "--no-libcall", "-d", out], out
    return [], None


# Configurations that run the uninstrumented build.
PLAIN_BUILD = ("plain", "callscope-libcalls")


def is_recorder(cfg):
    return cfg.startswith("callscope") or cfg == "uftrace"


# --- nginx -------------------------------------------------------------------
NGINX_CONF = """\
{user}
daemon off;
master_process on;
worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    default_type text/html;
    sendfile on;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        root {work}/html;
        location / {{ }}
    }}
}}
"""


def run_nginx(cfg, a, rep):
    binary = a.nginx_plain if cfg in PLAIN_BUILD else a.nginx_cyg
    name = f"nginx-{cfg}-{rep}"
    work = f"{a.work}/{name}"
    os.makedirs(f"{work}/logs", exist_ok=True)
    os.makedirs(f"{work}/html", exist_ok=True)
    with open(f"{work}/html/index.html", "w") as f:
        f.write("<html><body>" + "callscope realprog benchmark " * 20 + "</body></html>\n")
    port = free_port()
    with open(f"{work}/nginx.conf", "w") as f:
        f.write(NGINX_CONF.format(work=work, port=port,
                                  user="user root;" if os.geteuid() == 0 else ""))
    prefix, out = recorder_cmd(cfg, a, a.work, name)
    program = [binary, "-p", work, "-c", f"{work}/nginx.conf"]
    cmd = prefix + ([" ".join(program)] if cfg == "callscope-query" else program)
    log(" ".join(cmd))
    errf = open(f"{a.work}/{name}.stderr", "w+")
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
    a.live.append(proc)
    row = {"program": "nginx", "config": cfg, "rep": rep}
    try:
        wait_port(port)
        # the master: the process that wrote the pid file
        deadline = time.time() + 30
        while not os.path.exists(f"{work}/nginx.pid") and time.time() < deadline:
            time.sleep(0.05)
        master = int(open(f"{work}/nginx.pid").read())
        deadline = time.time() + 30
        while len(children(master)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # let the workers settle
        rec = proc.pid if is_recorder(cfg) else None

        def sample():
            pids = [master] + children(master)
            s = {"prog": tree_cpu(pids), "t": time.time()}
            if rec:
                s.update(rec=cpu_self(rec), rec_ns=cpu_ns(rec), ctx=ctxt(rec),
                         thr=nthreads(rec))
            return s

        s0 = sample()
        w = subprocess.run(["wrk", "-t1", "-c4", f"-d{a.load_s}s",
                            f"http://127.0.0.1:{port}/index.html"],
                           capture_output=True, text=True, check=True)
        s1 = sample()
        m = re.search(r"(\d+) requests in", w.stdout)
        row["requests"] = int(m.group(1)) if m else 0
        row["load_s"] = s1["t"] - s0["t"]
        row["prog_cpu_load_s"] = s1["prog"] - s0["prog"]
        if rec:
            row["rec_cpu_load_s"] = s1["rec"] - s0["rec"]
        time.sleep(1.0)  # the tail of the load drains
        i0 = sample()
        time.sleep(a.idle_s)
        i1 = sample()
        row["idle_s"] = i1["t"] - i0["t"]
        row["prog_cpu_idle_s"] = i1["prog"] - i0["prog"]
        if rec:
            row["rec_cpu_idle_s"] = i1["rec"] - i0["rec"]
            row["rec_cpu_idle_ns_s"] = i1["rec_ns"] - i0["rec_ns"]
            row["rec_wakeups_idle"] = i1["ctx"] - i0["ctx"]
            row["rec_threads"] = i1["thr"]
            if a.strace and rep == 0 and shutil.which("strace"):
                sf = f"{a.out_raw}/strace-{name}.txt"
                subprocess.run(["timeout", "-s", "INT", str(a.strace_s), "strace", "-f", "-c",
                                "-o", sf, "-p", str(rec)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                # threads' names, to say which one wakes
                with open(sf, "a") as f:
                    f.write("\n# threads of the recorder: tid comm voluntary nonvoluntary\n")
                    for t in sorted(glob.glob(f"/proc/{rec}/task/*")):
                        try:
                            comm = open(f"{t}/comm").read().strip()
                            st = open(f"{t}/status").read()
                            v = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1)
                            nv = re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", st, re.M).group(1)
                            f.write(f"# {os.path.basename(t)} {comm} {v} {nv}\n")
                        except (FileNotFoundError, AttributeError):
                            pass
        os.kill(master, signal.SIGQUIT)  # graceful: workers finish, master exits
        if rec:
            s_self, s_children, rc = wait_zombie(proc, 600)
            row["rec_cpu_total_s"] = s_self
            row["prog_cpu_total_s"] = s_children
        else:
            rc = proc.wait(timeout=120)
        row["rc"] = rc
        row["wall_s"] = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        a.live.remove(proc)
    finish_row(row, cfg, out, errf, a.out_raw)
    return row


def finish_row(row, cfg, out, errf, raw_dir):
    errf.seek(0)
    err = errf.read()
    errf.close()
    if err:
        shutil.copy(errf.name, raw_dir)  # what the recorder (and the program) said
    if cfg.startswith("callscope"):
        row["calls"] = callscope_calls(err)
        m = WAITED_RE.search(err)
        row["waited_s"] = float(m.group(1)) if m else 0.0
        if row["calls"] is None:
            log(f"no call count in the stderr of {cfg}:\n{err[-2000:]}")
        row["trace_bytes"] = du(out)
    elif cfg == "uftrace":
        row["calls"] = uftrace_calls(out)
        row["trace_bytes"] = du(out)
    if out and not os.environ.get("KEEP_TRACES"):
        if os.path.isdir(out):
            shutil.rmtree(out, ignore_errors=True)
        elif os.path.exists(out):
            os.remove(out)


# --- sqlite ------------------------------------------------------------------
def run_sqlite(cfg, a, rep):
    binary = a.sqlite_plain if cfg in PLAIN_BUILD else a.sqlite_cyg
    name = f"sqlite-{cfg}-{rep}"
    prefix, out = recorder_cmd(cfg, a, a.work, name)
    cmd = prefix + [binary, "--size", str(a.sqlite_size), "--memdb"]
    log(" ".join(cmd))
    errf = open(f"{a.work}/{name}.stderr", "w+")
    row = {"program": "sqlite", "config": cfg, "rep": rep}
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
    a.live.append(proc)
    try:
        if is_recorder(cfg):
            s_self, s_children, rc = wait_zombie(proc, 3600)
            row["rec_cpu_total_s"] = s_self
            row["prog_cpu_total_s"] = s_children
        else:
            _, status, ru = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            rc = proc.returncode
            row["prog_cpu_total_s"] = ru.ru_utime + ru.ru_stime
        row["rc"] = rc
        row["wall_s"] = time.time() - t0
    finally:
        if proc.poll() is None and proc.returncode is None:
            proc.kill()
            proc.wait()
        a.live.remove(proc)
    finish_row(row, cfg, out, errf, a.out_raw)
    return row


# --- report ------------------------------------------------------------------
COLS = ["program", "config", "rep", "rc", "wall_s", "requests", "load_s", "idle_s",
        "calls", "trace_bytes", "prog_cpu_load_s", "prog_cpu_idle_s", "prog_cpu_total_s",
        "rec_cpu_load_s", "rec_cpu_idle_s", "rec_cpu_idle_ns_s", "rec_cpu_total_s",
        "rec_wakeups_idle", "rec_threads", "waited_s"]


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def fmt(x, nd=1):
    if x is None:
        return "—"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.{nd}f}"


def ratio(x, y, nd=2):
    if x is None or y is None or y == 0:
        return "—"
    return f"{x / y:.{nd}f}×"


def report(rows, a, meta):
    L = []
    L.append(f"# Real programs: the recorder's own CPU ({meta['date']})\n")
    L.append(f"- machine: {meta['cpu']}, {meta['ncpu']} CPUs; load average before: {meta['load']}")
    L.append(f"- callscope: `{a.callscope}` (checkout {meta['commit']}; its last change to the sources: {meta.get('src_commit', '?')}); {meta['uftrace']}")
    L.append(f"- command: `{meta['command']}`")
    L.append(f"- nginx {meta['nginx_version']}, 2 workers, `wrk -t1 -c4 -d{a.load_s}s` on loopback, "
             f"then {a.idle_s} s idle; sqlite {meta['sqlite_version']} `speedtest1 --size {a.sqlite_size} --memdb`; "
             f"built -O2 -g (instrumented: -finstrument-functions); reps: {a.reps} (medians)")
    L.append("- recorder CPU = utime+stime of the recorder process itself (not its children); "
             "calls = the whole run's (startup, load, idle, exit)\n")
    for prog in ("nginx", "sqlite"):
        pr = [r for r in rows if r["program"] == prog]
        if not pr:
            continue
        by = {c: [r for r in pr if r["config"] == c] for c in dict.fromkeys(r["config"] for r in pr)}
        L.append(f"## {prog}\n")
        if prog == "nginx":
            L.append("| configuration | requests/s | calls | calls/request | program CPU µs/request | vs plain | "
                     "recorder CPU under load, ns/call | program + recorder CPU µs/request | recorder CPU whole run, ns/call | "
                     "bytes/call | idle: recorder wakeups/s | idle: recorder % of a core | recorder threads | program waited for the recorder, s |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        else:
            L.append("| configuration | wall s | calls | program CPU s | vs plain | program CPU ns/call added | "
                     "recorder CPU s | recorder CPU ns/call | program + recorder CPU ns/call added | bytes/call | "
                     "program waited for the recorder, s |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        base = {}
        for c, rs in by.items():
            d = {}
            calls = med(rs, "calls")
            d["calls"] = calls
            if prog == "nginx":
                req = med(rs, "requests")
                d["rps"] = med([{"x": r["requests"] / r["load_s"]} for r in rs], "x")
                d["cpu_req"] = med([{"x": r["prog_cpu_load_s"] / r["requests"] * 1e6} for r in rs if r.get("requests")], "x")
                if calls:
                    d["calls_req"] = med([{"x": r["calls"] / r["requests"]} for r in rs if r.get("calls") and r.get("requests")], "x")
                    d["rec_load"] = med([{"x": r["rec_cpu_load_s"] / r["calls"] * 1e9} for r in rs if r.get("calls")], "x")
                    d["both_req"] = med([{"x": (r["prog_cpu_load_s"] + r["rec_cpu_load_s"]) / r["requests"] * 1e6}
                                         for r in rs if r.get("requests")], "x")
                    d["rec_total"] = med([{"x": r["rec_cpu_total_s"] / r["calls"] * 1e9} for r in rs if r.get("calls")], "x")
                    d["bpc"] = med([{"x": r["trace_bytes"] / r["calls"]} for r in rs if r.get("calls")], "x")
                if is_recorder(c):
                    d["wk"] = med([{"x": r["rec_wakeups_idle"] / r["idle_s"]} for r in rs], "x")
                    d["idle_pct"] = med([{"x": r["rec_cpu_idle_ns_s"] / r["idle_s"] * 100} for r in rs], "x")
                    d["idle_pct_ticks"] = med([{"x": r["rec_cpu_idle_s"] / r["idle_s"] * 100} for r in rs], "x")
                    d["thr"] = med(rs, "rec_threads")
                if c == "plain":
                    base = d
                L.append(f"| {c} | {fmt(d['rps'], 0)} | {fmt(calls)} | {fmt(d.get('calls_req'))} | "
                         f"{fmt(d['cpu_req'], 2)} | {ratio(d['cpu_req'], base.get('cpu_req'))} | "
                         f"{fmt(d.get('rec_load'))} | {fmt(d.get('both_req'), 2)} | {fmt(d.get('rec_total'))} | {fmt(d.get('bpc'), 2)} | "
                         f"{fmt(d.get('wk'))} | {fmt(d.get('idle_pct'), 2)} | {fmt(d.get('thr'), 0)} | {fmt(med(rs, 'waited_s'), 2)} |")
            else:
                d["cpu"] = med(rs, "prog_cpu_total_s")
                d["wall"] = med(rs, "wall_s")
                if calls:
                    d["rec"] = med(rs, "rec_cpu_total_s")
                    d["rec_pc"] = med([{"x": r["rec_cpu_total_s"] / r["calls"] * 1e9} for r in rs if r.get("calls")], "x")
                    d["bpc"] = med([{"x": r["trace_bytes"] / r["calls"]} for r in rs if r.get("calls")], "x")
                if c == "plain":
                    base = d
                d["added"] = None
                if calls and base.get("cpu") is not None:
                    d["added"] = (d["cpu"] - base["cpu"]) / calls * 1e9
                both = (d["added"] + d["rec_pc"]) if d.get("added") is not None and d.get("rec_pc") is not None else None
                L.append(f"| {c} | {fmt(d['wall'], 2)} | {fmt(calls)} | {fmt(d['cpu'], 2)} | "
                         f"{ratio(d['cpu'], base.get('cpu'))} | {fmt(d.get('added'))} | {fmt(d.get('rec'), 2)} | "
                         f"{fmt(d.get('rec_pc'))} | {fmt(both)} | {fmt(d.get('bpc'), 2)} | {fmt(med(rs, 'waited_s'), 2)} |")
            by[c] = (rs, d)
        L.append("")
        cs = by.get("callscope-record", (None, {}))[1]
        uf = by.get("uftrace", (None, {}))[1]
        pf = by.get("callscope-profile", (None, {}))[1]
        L.append(f"Targets (issue 31), {prog}:\n")
        L.append("| figure | callscope record | target | verdict | uftrace | callscope / uftrace |")
        L.append("|---|---:|---|---|---:|---:|")
        rec_key = "rec_load" if prog == "nginx" else "rec_pc"
        v = cs.get(rec_key)
        L.append(f"| recorder's own CPU, ns/call{' (under load)' if prog == 'nginx' else ''} | {fmt(v)} | ≤ 12 | "
                 f"{verdict(v, 12)} | {fmt(uf.get(rec_key))} | {ratio(v, uf.get(rec_key))} |")
        v = cs.get("bpc")
        L.append(f"| trace bytes/call | {fmt(v, 2)} | ≤ 1 | {verdict(v, 1)} | {fmt(uf.get('bpc'), 2)} | {ratio(v, uf.get('bpc'), 3)} |")
        if prog == "nginx":
            for label, dd in (("record", cs), ("profile", pf)):
                if not dd:
                    continue
                v = dd.get("wk")
                L.append(f"| idle, {label} mode: recorder wakeups/s | {fmt(v)} | ≤ 10 | {verdict(v, 10)} | {fmt(uf.get('wk'))} | |")
                v = dd.get("idle_pct")
                L.append(f"| idle, {label} mode: recorder % of a core (schedstat; from ticks: {fmt(dd.get('idle_pct_ticks'), 2)}) "
                         f"| {fmt(v, 2)} | ≤ 0.5 | {verdict(v, 0.5)} | {fmt(uf.get('idle_pct'), 2)} | |")
            L.append(f"| program CPU per request vs plain | {ratio(cs.get('cpu_req'), by['plain'][1].get('cpu_req') if 'plain' in by else None)} | | | "
                     f"{ratio(uf.get('cpu_req'), by['plain'][1].get('cpu_req') if 'plain' in by else None)} | "
                     f"{ratio(cs.get('cpu_req'), uf.get('cpu_req'))} |")
            tot_cs = (cs.get("cpu_req") or 0) + (cs.get("rec_load") or 0) * (cs.get("calls_req") or 0) / 1e3
            tot_uf = (uf.get("cpu_req") or 0) + (uf.get("rec_load") or 0) * (uf.get("calls_req") or 0) / 1e3
            if cs and uf:
                L.append(f"| program + recorder CPU per request, µs | {fmt(tot_cs, 2)} | | | {fmt(tot_uf, 2)} | {ratio(tot_cs, tot_uf)} |")
        else:
            pl = by["plain"][1] if "plain" in by else {}
            L.append(f"| program CPU vs plain | {ratio(cs.get('cpu'), pl.get('cpu'))} | | | {ratio(uf.get('cpu'), pl.get('cpu'))} | "
                     f"{ratio(cs.get('cpu'), uf.get('cpu'))} |")
            if cs and uf and cs.get("rec") is not None and uf.get("rec") is not None:
                L.append(f"| program + recorder CPU, s | {fmt(cs['cpu'] + cs['rec'], 2)} | | | {fmt(uf['cpu'] + uf['rec'], 2)} | "
                         f"{ratio(cs['cpu'] + cs['rec'], uf['cpu'] + uf['rec'])} |")
        L.append("")
    straces = sorted(glob.glob(f"{a.out_raw}/strace-*.txt"))
    if straces:
        L.append(f"## Where the idle recorder's wakeups come from (`strace -f -c -p PID`, {a.strace_s} s of idle)\n")
        for s in straces:
            L.append(f"### {os.path.basename(s)[7:-4]}\n\n```")
            L.append(open(s).read().rstrip())
            L.append("```\n")
    return "\n".join(L) + "\n"


def verdict(v, target):
    if v is None:
        return "—"
    return "met" if v <= target else "**missed**"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--callscope", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--out-raw", required=True)
    p.add_argument("--report", required=True)
    p.add_argument("--tsv", required=True)
    p.add_argument("--nginx-plain")
    p.add_argument("--nginx-cyg")
    p.add_argument("--sqlite-plain")
    p.add_argument("--sqlite-cyg")
    p.add_argument("--sqlite-size", type=int, default=5)
    p.add_argument("--load-s", type=int, default=10)
    p.add_argument("--idle-s", type=int, default=10)
    p.add_argument("--strace-s", type=int, default=5)
    p.add_argument("--strace", type=int, default=1)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--configs", default="plain cyg callscope-record callscope-profile callscope-query callscope-libcalls callscope-memory uftrace")
    p.add_argument("--programs", default="nginx sqlite")
    p.add_argument("--meta", nargs="*", default=[])
    a = p.parse_args()
    a.live = []
    meta = dict(kv.split("=", 1) for kv in a.meta)

    def on_signal(sig, _):
        for pr in list(a.live):
            try:
                pr.kill()
            except ProcessLookupError:
                pass
        sys.exit(128 + sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    rows = []
    configs = a.configs.split()
    try:
        for prog in a.programs.split():
            for rep in range(a.reps):
                # rotate the order every repetition
                order = configs[rep % len(configs):] + configs[:rep % len(configs)]
                for cfg in order:
                    if prog == "sqlite" and cfg in ("callscope-profile", "callscope-query"):
                        continue
                    row = (run_nginx if prog == "nginx" else run_sqlite)(cfg, a, rep)
                    log(" ".join(f"{k}={row.get(k)}" for k in COLS if row.get(k) is not None))
                    rows.append(row)
                    with open(a.tsv, "w") as f:
                        f.write("\t".join(COLS) + "\n")
                        for r in rows:
                            f.write("\t".join("" if r.get(k) is None else
                                              (f"{r[k]:.6f}" if isinstance(r[k], float) else str(r[k]))
                                              for k in COLS) + "\n")
    finally:
        for pr in list(a.live):
            pr.kill()
    text = report(rows, a, meta)
    with open(a.report, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
