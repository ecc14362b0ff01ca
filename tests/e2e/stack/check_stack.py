#!/usr/bin/env python3
"""End-to-end checks of `callscope stack` on tests/fixtures/stack/stack_fixture.c.

Modes:
  fixture  -- frames against gcc's .su file (every static function must agree,
              every dynamic one must be flagged), hand-checked worst-case
              paths and recursion cycles, user edges, a stripped copy.
  cases    -- tests/fixtures/stack/stack_cases.c: the .su agreement, the bound
              of a mutual recursion, indirect tail jumps against switch
              tables, --unresolved, exact names in edges files, --limit.
  measured -- an -finstrument-functions build of stack_cases.c run under
              `callscope record`: no measured depth above a complete bound.
  threads  -- stack_threads.cpp: std::thread's _M_run is an entry point, a
              virtual tail call is an unknown edge.
  objects  -- relocatable objects: kmod_like.o (kernel flags) against its
              .su, its entry points, ignored ftrace/return-thunk calls, a
              retpoline call as unknown; the archive resolving calls between
              its members; stack_cases.o against its .su.
  arm      -- tests/fixtures/stack/firmware.c for Cortex-M (Thumb-2) and
              AArch64: the .su agreement, the vector table's handlers as
              entry points, the recursion's bound, blx/blr as unknown, a
              switch table not, --unresolved and --limit.
  badinput -- a non-ELF file, a truncated ELF, a missing file, an unknown
              format, an ar archive, a corrupt .eh_frame, bad --limit and
              edges files: each must fail (or warn) with a clear message.
"""
import argparse
import csv
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def callscope_ok(args, cmd):
    rc, out, err = run([args.callscope, "stack"] + cmd)
    if rc != 0:
        print("callscope stack %s failed (%d): %s" % (" ".join(cmd), rc, err))
        sys.exit(1)
    return out


def frames(args, binary):
    out = callscope_ok(args, [binary, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(out)))
    return {r["function"]: r for r in rows}


def worst(args, binary, names, extra=()):
    out = callscope_ok(args, [binary, "--worst", "--format", "json"] + list(extra) + list(names))
    return {e["function"]: e for e in json.loads(out)["entries"]}


def read_su(path):
    """gcc .su lines: 'file:line:col:name<TAB>bytes<TAB>static|dynamic[,bounded]'."""
    result = {}
    with open(path) as f:
        for line in f:
            loc, size, kind = line.rstrip("\n").split("\t")
            result[loc.rsplit(":", 1)[1]] = (int(size), kind)
    return result


def check_su(fr, su_path):
    """Every function of the .su file: the same bytes; flagged dynamic exactly
    when gcc says 'dynamic' ('dynamic,bounded' is counted in full). The static
    part of a 'dynamic' frame is only a part, and for alloca at -O0 gcc's figure
    is 16 bytes more than the frame the prologue builds: only the flag counts."""
    su = read_su(su_path)
    check(len(su) > 0, ".su file lists functions")
    for name, (size, kind) in su.items():
        got = fr.get(name)
        if got is None:
            check(False, "%s from .su is listed" % name)
            continue
        if kind != "dynamic":
            check(int(got["frame_bytes"]) == size,
                  "%s: frame %s bytes, gcc .su says %d (%s)" % (name, got["frame_bytes"], size, kind))
        check((got["dynamic"] == "true") == (kind == "dynamic"),
              "%s: dynamic=%s, gcc .su says %s" % (name, got["dynamic"], kind))


# Hand-checked figures (gcc 12, Debian 12): worst-case bytes from `worker`,
# the sum of worker + big_local + leaf_add frames as the .su file gives them.
HAND_CHECKED = {
    ("gcc", "O0"): {"worker": 560 + 4144 + 16, "big_local": 4144},
    ("gcc", "O2"): {"worker": 528 + 4112 + 8, "big_local": 4112},
}


def fixture_mode(args):
    fr = frames(args, args.binary)
    names = ["leaf_add", "big_local", "vla_user", "alloca_user", "fact", "is_even", "is_odd",
             "via_pointer", "tail_caller", "worker", "main"]
    for n in names:
        check(n in fr, "function %s listed" % n)
    if any(n not in fr for n in names):
        return

    # 1. Frames agree with gcc -fstack-usage for every function.
    if args.su:
        check_su(fr, args.su)
    for n in ("vla_user", "alloca_user"):
        check(fr[n]["dynamic"] == "true", "%s flagged dynamic" % n)
    for n in ("big_local", "leaf_add", "fact", "main"):
        check(fr[n]["dynamic"] == "false", "%s not dynamic" % n)
    check(int(fr["big_local"]["frame_bytes"]) >= 4096 + 8, "big_local frame holds its 4096-byte array")
    expected_leaf = 16 if args.opt == "O0" else 8
    check(int(fr["leaf_add"]["frame_bytes"]) == expected_leaf,
          "leaf_add frame %s bytes, expected %d" % (fr["leaf_add"]["frame_bytes"], expected_leaf))

    # 2. Worst-case paths.
    w = worst(args, args.binary, [])  # default entries: main and thread start routines
    check(set(w) == {"main", "worker"}, "default entries are main and worker, got %s" % sorted(w))
    if "worker" in w:
        e = w["worker"]
        path = [p["function"] for p in e["path"]]
        check(path[:2] == ["worker", "big_local"], "worker's deepest path starts worker -> big_local: %s" % path)
        check(e["worst_bytes"] == sum(p["frame_bytes"] for p in e["path"]) + e["red_zone_bytes"],
              "worker worst bytes are the sum of its path's frames and the last one's red zone")
        check(not e["unbounded"] and not e["unknown"], "worker's worst case is bounded and known")
        hand = HAND_CHECKED.get((args.compiler, args.opt))
        if hand:
            check(e["worst_bytes"] - e["red_zone_bytes"] == hand["worker"],
                  "worker worst %d bytes (less %d of red zone), hand-checked %d" %
                  (e["worst_bytes"], e["red_zone_bytes"], hand["worker"]))
            check(int(fr["big_local"]["frame_bytes"]) == hand["big_local"], "big_local hand-checked frame")
    if "main" in w:
        e = w["main"]
        check(e["unbounded"], "main reaches recursion: unbounded")
        check(e["dynamic"], "main reaches a dynamic frame")
        check(e["unknown"], "main reaches an unresolved indirect call")
        check(e["worst_bytes"] >= int(fr["main"]["frame_bytes"]) + int(fr["big_local"]["frame_bytes"]),
              "main's worst case covers main + big_local")

    # 3. Recursion cycles, named.
    w = worst(args, args.binary, ["fact", "is_even", "is_odd"])
    check(w.get("fact", {}).get("recursion") == ["fact"], "fact's cycle is fact -> fact: %s" % w.get("fact"))
    cyc = w.get("is_even", {}).get("recursion", [])
    check(sorted(cyc) == ["is_even", "is_odd"], "is_even's cycle is is_even -> is_odd: %s" % cyc)
    check(w.get("fact", {}).get("recursion_bytes_per_trip") == int(fr["fact"]["frame_bytes"]),
          "fact's trip costs its frame")

    # 4. The call through a pointer is unknown until the edges file closes it.
    w = worst(args, args.binary, ["via_pointer"])
    check(w["via_pointer"]["unknown"], "via_pointer has an unknown edge")
    w = worst(args, args.binary, ["via_pointer"], ["--edges", args.edges])
    e = w["via_pointer"]
    check(not e["unknown"], "the edges file closes via_pointer's indirect call")
    check([p["function"] for p in e["path"]][:2] == ["via_pointer", "big_local"],
          "via_pointer -> big_local after the edges file: %s" % [p["function"] for p in e["path"]])

    # 5. The tail call at -O2: tail_caller's frame is replaced by big_local's.
    w = worst(args, args.binary, ["tail_caller", "big_local"])
    e = w["tail_caller"]
    check([p["function"] for p in e["path"]][:2] == ["tail_caller", "big_local"], "tail_caller -> big_local")
    if args.opt == "O2":
        check(e["path"][0]["tail_call_to_next"], "tail_caller reaches big_local by a tail call")
        check(e["worst_bytes"] == w["big_local"]["worst_bytes"],
              "a tail call adds no frame: %d vs %d" % (e["worst_bytes"], w["big_local"]["worst_bytes"]))
    else:
        check(e["worst_bytes"] == int(fr["tail_caller"]["frame_bytes"]) + w["big_local"]["worst_bytes"],
              "a call adds the caller's frame")

    # 6. A stripped copy: the same frames, shown by address.
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "stripped")
        shutil.copy(args.binary, stripped)
        if run(["strip", stripped])[0] == 0:
            sf = frames(args, stripped)
            addr = fr["big_local"]["address"]
            check(addr in sf and sf[addr]["frame_bytes"] == fr["big_local"]["frame_bytes"],
                  "stripped: big_local's frame is shown at %s" % addr)


def cases_mode(args):
    fr = frames(args, args.binary)
    names = ["big", "rec_a", "rec_b", "many", "many_caller", "huge", "tail_via_pointer",
             "switcher", "main"]
    for n in names:
        check(n in fr, "function %s listed" % n)
    if any(n not in fr for n in names):
        return
    frame = {n: int(fr[n]["frame_bytes"]) for n in names}
    if args.su:
        check_su(fr, args.su)
    # The frame (as gcc counts it) leaves out the red zone a leaf uses below
    # rsp; the worst case counts it.
    wh = worst(args, args.binary, ["huge"])["huge"]
    check(wh["worst_bytes"] >= 65536 + 8, "huge's worst case holds its 64 KiB array: %d" % wh["worst_bytes"])
    check(wh["worst_bytes"] == frame["huge"] + wh["red_zone_bytes"], "huge: frame + red zone")
    check(fr["rec_a"]["file"].endswith("stack_cases.c") and int(fr["rec_a"]["line"]) > 0,
          "rec_a's declaration is placed: %s:%s" % (fr["rec_a"]["file"], fr["rec_a"]["line"]))

    # The recursion: rec_a's bound counts rec_b and what rec_b calls.
    w = worst(args, args.binary, ["rec_a", "rec_b", "main", "tail_via_pointer", "switcher"])
    one_trip = frame["rec_a"] + frame["rec_b"] + frame["big"] + w["rec_a"]["red_zone_bytes"]
    for n in ("rec_a", "rec_b"):
        check(w[n]["worst_bytes"] == one_trip,
              "%s: worst %d bytes = rec_a + rec_b + big (+ big's red zone) = %d" % (n, w[n]["worst_bytes"], one_trip))
        check(w[n]["unbounded"], "%s is unbounded" % n)
    path = [p["function"] for p in w["rec_a"]["path"]]
    check(sorted(path) == ["big", "rec_a", "rec_b"] and path[-1] == "big",
          "rec_a's path is the cycle then big: %s" % path)
    check(w["main"]["worst_bytes"] >= frame["main"] + one_trip, "main's worst covers one trip and big")
    check(sorted(w["rec_a"]["recursion"]) == ["rec_a", "rec_b"], "the cycle is named: %s" % w["rec_a"]["recursion"])

    # A call or tail jump through a pointer is unknown; a jump table is not.
    check(w["tail_via_pointer"]["unknown"], "tail_via_pointer reaches an unknown callee")
    check(not w["switcher"]["unknown"], "switcher's jump table is not an unknown edge")

    # --unresolved names the site, its instruction and its line.
    out = callscope_ok(args, [args.binary, "--unresolved", "--format", "csv"])
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["function"] == "tail_via_pointer"]
    check(len(rows) == 1, "--unresolved lists tail_via_pointer once: %s" % rows)
    if rows:
        r = rows[0]
        check(r["file"].endswith("stack_cases.c") and int(r["line"] or 0) > 0, "site has file:line: %s" % r)
        check(r["instruction"].startswith("jmp" if args.opt == "O2" else "call"),
              "site instruction: %s" % r["instruction"])
    check(not any(r["function"] == "switcher" for r in csv.DictReader(io.StringIO(out))),
          "--unresolved does not list the switch")
    text = callscope_ok(args, [args.binary, "--unresolved"])
    check("tail_via_pointer -> ?" in text, "--unresolved text is an edges template")

    with tempfile.TemporaryDirectory() as tmp:
        edges = os.path.join(tmp, "edges.txt")
        with open(edges, "w") as f:
            f.write("tail_via_pointer -> big\n")
        w = worst(args, args.binary, ["tail_via_pointer"], ["--edges", edges])
        e = w["tail_via_pointer"]
        check(not e["unknown"], "the edges file closes tail_via_pointer")
        check([p["function"] for p in e["path"]][-1] == "big", "tail_via_pointer -> big: %s" % e["path"])
        out = callscope_ok(args, [args.binary, "--unresolved", "--edges", edges, "tail_*", "--format", "csv"])
        check(len(list(csv.DictReader(io.StringIO(out)))) == 0, "closed sites are no longer listed")

    # --limit: the gate's exit status and its reasons.
    rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "many_caller=1M"])
    check(rc == 0, "--limit many_caller=1M passes (rc %d, %s)" % (rc, err.strip()))
    check("limit ok" in out, "the verdict is shown: %s" % out[-300:])
    rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "huge=1K"])
    check(rc == 3 and "over the limit" in out and "huge" in err,
          "--limit huge=1K fails with exit 3 (rc %d): %s %s" % (rc, out[-200:], err.strip()))
    rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "rec_a=1M"])
    check(rc == 3 and "not a bound" in out and "recursion" in out,
          "--limit on a recursion fails: not a bound (rc %d)" % rc)
    rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "rec_a=1M,many_caller=1M",
                        "--format", "json"])
    limits = {e["function"]: e["limit"] for e in json.loads(out)["entries"]}
    check(limits.get("many_caller", {}).get("ok") is True and limits.get("rec_a", {}).get("ok") is False,
          "json carries each verdict: %s" % limits)


def measured_mode(args):
    """Records the instrumented build and sets every measured depth beside
    the static bound of the same function (same binary)."""
    module = os.path.basename(args.binary)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "cases.trace")
        rc, out, err = run([args.callscope, "record", "-o", trace, "--", args.binary, "1"])
        check(rc == 0, "record runs the fixture (rc %d): %s" % (rc, err.strip()))
        if rc != 0:
            return
        rc, out, err = run([args.callscope, "report", "--stack", trace, "--format", "csv"])
        check(rc == 0, "report --stack (rc %d): %s" % (rc, err.strip()))
        measured = {r["function"]: int(r["bytes"]) for r in csv.DictReader(io.StringIO(out))
                    if r["kind"] == "function" and r["module"] == module}
        # The peak path's frames add up to the peak.
        rows = list(csv.DictReader(io.StringIO(out)))
        peak = [int(r["bytes"]) for r in rows if r["kind"] == "peak"]
        frame_rows = [r for r in rows if r["kind"] == "frame"]
        check(len(peak) == 1 and len(frame_rows) >= 2, "one peak, its frames listed")
        if peak and frame_rows:
            check(frame_rows[0]["bytes"] == "", "the outermost frame's bytes are unknown")
            check(sum(int(r["bytes"]) for r in frame_rows[1:]) == peak[0],
                  "the frames at the peak add up to it: %s vs %d" % ([r["bytes"] for r in frame_rows], peak[0]))
        # report --stack --static: the same comparison made by callscope.
        rc, out, err = run([args.callscope, "report", "--stack", trace, "--static", args.binary,
                            "--format", "csv"])
        check(rc == 0, "report --stack --static (rc %d): %s" % (rc, err.strip()))
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["kind"] == "function" and r["module"] == module]
        bounded = [r for r in rows if r["static_below_bytes"] != "" and r["static_flags"] == ""]
        check(len(bounded) >= 3, "--static gives complete bounds for at least three functions: %s" % rows)
        for r in rows:
            check(r["above_complete_bound"] != "true",
                  "%s: measured %s above its complete bound %s" % (r["function"], r["bytes"], r["static_below_bytes"]))
        # The figures are exact where nothing is hidden: many_caller's pushed
        # arguments and many's frame.
        mc = [r for r in rows if r["function"] == "many_caller"]
        check(len(mc) == 1 and mc[0]["bytes"] == mc[0]["static_below_bytes"],
              "many_caller: measured equals its static bound: %s" % mc)
        rc, out, err = run([args.callscope, "report", "--stack", trace, "--static", args.binary])
        check("STATIC BOUND" in out and "MEASURED ABOVE" not in out, "text output has the static column")
    check("main" in measured and "rec_b" in measured, "the run measured main and rec_b: %s" % measured)
    w = worst(args, args.binary, sorted(measured))
    compared = 0
    for name, below in measured.items():
        e = w.get(name)
        if e is None:
            continue
        complete = not (e["unbounded"] or e["dynamic"] or e["unknown"])
        if complete:
            compared += 1
            check(below <= e["worst_bytes"],
                  "%s: measured %d bytes below it, above its complete static bound %d" %
                  (name, below, e["worst_bytes"]))
    check(compared >= 3, "at least three complete bounds compared (got %d)" % compared)
    # One trip through the recursion: even the unbounded figure holds it.
    for name in ("main", "rec_a"):
        if name in measured and name in w:
            check(measured[name] <= w[name]["worst_bytes"],
                  "%s: one trip measured %d bytes, static %d" % (name, measured[name], w[name]["worst_bytes"]))
    check(measured.get("main", 0) >= 4096, "the run went through big's 4 KiB below main")


def threads_mode(args):
    out = callscope_ok(args, [args.binary, "--worst", "--format", "json"])
    entries = {e["function"]: e for e in json.loads(out)["entries"]}
    runs = [n for n in entries if n.startswith("std::thread::_State_impl<") and n.endswith("_M_run()")]
    check("main" in entries, "main is an entry point")
    check(len(runs) == 1, "std::thread's _M_run is an entry point: %s" % sorted(entries))
    if runs:
        path = [p["function"] for p in entries[runs[0]]["path"]]
        check("thread_body(int)" in path, "the thread's path reaches thread_body: %s" % path)
    w = worst(args, args.binary, ["measure(Shape*, int)"])
    check(w.get("measure(Shape*, int)", {}).get("unknown") is True,
          "the virtual call in measure is an unknown edge: %s" % w)


def objects_mode(args):
    objdir = os.path.dirname(args.binary)
    ko = args.binary
    fr = frames(args, ko)
    # module_init/module_exit make global aliases: the functions go by them.
    aliases = {"my_init": "init_module", "my_exit": "cleanup_module"}
    su = read_su(os.path.join(objdir, "kmod_like.su"))
    check(len(su) == 6, "kmod_like.su lists six functions: %s" % sorted(su))
    for name, (size, kind) in su.items():
        got = fr.get(aliases.get(name, name))
        check(got is not None and int(got["frame_bytes"]) == size,
              "%s: frame %s, gcc .su says %d" % (name, got and got["frame_bytes"], size))
    check(all(fr[n]["source"] == "cfi" for n in ("helper", "dev_open", "init_module")),
          "the object's .debug_frame is read through its relocations: %s" %
          {n: fr[n]["source"] for n in fr})
    w = worst(args, ko, [])
    check(set(w) == {"init_module", "cleanup_module", "dev_open", "dev_release"},
          "entry points: init/cleanup and the ops table's functions: %s" % sorted(w))
    if "dev_open" in w:
        e = w["dev_open"]
        check([p["function"] for p in e["path"]] == ["dev_open", "helper"], "dev_open -> helper: %s" % e["path"])
        check(not e["external"] and not e["unknown"],
              "__fentry__ and __x86_return_thunk are not calls: %s" % e)
        check(e["worst_bytes"] == int(fr["dev_open"]["frame_bytes"]) + int(fr["helper"]["frame_bytes"]),
              "dev_open's worst case is its frame and helper's")
    check(w.get("init_module", {}).get("external") is True, "init_module calls register_ops, outside the object")
    out = callscope_ok(args, [ko, "--unresolved", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(out)))
    check(len(rows) == 1 and rows[0]["function"] == "call_through" and
          "__x86_indirect_thunk" in rows[0]["instruction"],
          "the retpoline call is the one unresolved site, named by its thunk: %s" % rows)

    # The archive: register_ops comes from its other member.
    a = worst(args, os.path.join(objdir, "libkmod_like.a"), ["init_module"])["init_module"]
    check([p["function"] for p in a["path"]] == ["init_module", "register_ops"],
          "in the archive init_module reaches register_ops: %s" % a["path"])
    check(not a["external"], "nothing is left outside the archive: %s" % a)

    # A plain object file: the same frames as gcc's .su.
    co = os.path.join(objdir, "stack_cases.o")
    check_su(frames(args, co), os.path.join(objdir, "stack_cases.su"))
    w = worst(args, co, ["rec_a"])
    check([p["function"] for p in w["rec_a"]["path"]][-1] == "big", "rec_a reaches big in the object file")


def arm_mode(args):
    fr = frames(args, args.binary)
    check_su(fr, args.su)
    thumb = args.compiler == "thumb"
    w = worst(args, args.binary, [])
    expected = {"main", "Reset_Handler", "SysTick_Handler"} if thumb else {"main"}
    check(set(w) == expected, "entry points %s, got %s" % (sorted(expected), sorted(w)))
    w = worst(args, args.binary, ["rec_a", "via_pointer", "switcher", "SysTick_Handler" if thumb else "big"])
    one_trip = sum(int(fr[n]["frame_bytes"]) for n in ("rec_a", "rec_b", "big"))
    check(w["rec_a"]["worst_bytes"] == one_trip and w["rec_a"]["unbounded"],
          "rec_a: one trip and big, %d bytes, unbounded: %s" % (one_trip, w["rec_a"]))
    check(w["via_pointer"]["unknown"], "the call through a pointer is unknown")
    check(not w["switcher"]["unknown"], "the switch is not an unknown edge")
    check(fr["vla"]["dynamic"] == "true", "the VLA's frame is dynamic")
    out = callscope_ok(args, [args.binary, "--unresolved", "--format", "csv"])
    sites = [r for r in csv.DictReader(io.StringIO(out)) if r["function"] == "via_pointer"]
    check(len(sites) == 1 and sites[0]["instruction"].startswith("blx" if thumb else "blr"),
          "--unresolved names via_pointer's %s: %s" % ("blx" if thumb else "blr", sites))
    if thumb:
        rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "SysTick_Handler=2K"])
        check(rc == 0, "the SysTick handler fits in 2K (rc %d): %s" % (rc, err.strip()))
        rc, out, err = run([args.callscope, "stack", args.binary, "--limit", "SysTick_Handler=512"])
        check(rc == 3, "and not in 512 bytes (rc %d)" % rc)


def corrupt_eh_frame(src, dst):
    """Copies an ELF file and breaks the length of its .eh_frame's third entry
    so that nothing after it can be found."""
    data = bytearray(open(src, "rb").read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    def section(i):
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, off, size
    _, stroff, _ = section(shstrndx)
    for i in range(shnum):
        name, off, size = section(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".eh_frame":
            pos = off
            for _ in range(2):
                length, = struct.unpack_from("<I", data, pos)
                pos += 4 + length
            struct.pack_into("<I", data, pos, 0xfffffff0)
            open(dst, "wb").write(data)
            return True
    return False


def badinput_mode(args):
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "notes.txt")
        with open(text, "w") as f:
            f.write("this is not a binary\n")
        truncated = os.path.join(tmp, "truncated")
        with open(args.binary, "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[: len(data) // 3])
        empty = os.path.join(tmp, "empty")
        open(empty, "w").close()
        cases = [
            ([text], "not an ELF file"),
            ([truncated], "truncated ELF file"),
            ([empty], "not an ELF file"),
            ([os.path.join(tmp, "missing")], "No such file or directory"),
            ([args.binary, "--format", "xml"], "valid formats: text, csv, json"),
        ]
        archive = os.path.join(tmp, "libthing.a")
        with open(archive, "wb") as f:
            f.write(b"!<arch>\n")  # an archive with no member
        exe_archive = os.path.join(tmp, "libexe.a")
        run(["ar", "rcs", exe_archive, args.binary])
        template = os.path.join(tmp, "template.edges")
        with open(template, "w") as f:
            f.write("main -> ?\n")
        cases += [
            ([archive], "the archive holds no object file"),
            ([exe_archive], "is not an object file"),
            ([args.binary, "--edges", template], "replace '?' by the function called from 'main'"),
            ([args.binary, "--limit", "8Q"], "invalid size '8Q'"),
            ([args.binary, "--limit", "no_such_function=8K"], "no function of"),
            ([args.binary, "--limit", "8K,"], "empty item in --limit"),
            ([args.binary, "--unresolved", "--worst"], "does not combine"),
        ]
        for cmd, message in cases:
            rc, out, err = run([args.callscope, "stack"] + cmd)
            check(rc != 0, "%s: non-zero exit (got %d)" % (cmd, rc))
            check(message in err, "%s: message contains '%s', got: %s" % (cmd, message, err.strip()))
            check(err.count("\n") <= 2, "%s: one clear message" % cmd)

        # A corrupt .eh_frame: a warning, and the functions it hides are said
        # to come from their prologue, each in the output.
        corrupt = os.path.join(tmp, "corrupt")
        if corrupt_eh_frame(args.binary, corrupt):
            rc, out, err = run([args.callscope, "stack", corrupt, "--format", "csv"])
            check(rc == 0, "a corrupt .eh_frame is not fatal (rc %d): %s" % (rc, err.strip()))
            check("corrupt .eh_frame" in err, "the corruption is warned about: %s" % err.strip())
            sources = [r["source"] for r in csv.DictReader(io.StringIO(out))]
            check("prologue:cfi-unreadable" in sources, "functions say their CFI was unreadable: %s" % set(sources))
            rc, out, err = run([args.callscope, "stack", corrupt])
            check("[CFI unreadable: prologue]" in out, "the text output marks them too")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--callscope", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mode", choices=["fixture", "cases", "measured", "threads", "objects", "arm", "badinput"],
                    default="fixture")
    ap.add_argument("--compiler", default="gcc")
    ap.add_argument("--opt", default="O0")
    ap.add_argument("--su")
    ap.add_argument("--edges")
    args = ap.parse_args()
    {"fixture": fixture_mode, "cases": cases_mode, "measured": measured_mode,
     "threads": threads_mode, "objects": objects_mode, "arm": arm_mode,
     "badinput": badinput_mode}[args.mode](args)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
