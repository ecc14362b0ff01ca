#!/usr/bin/env python3
"""End-to-end checks of `callscope stack` on tests/fixtures/stack/stack_fixture.c.

Modes:
  fixture  -- frames against gcc's .su file (every static function must agree,
              every dynamic one must be flagged), hand-checked worst-case
              paths and recursion cycles, user edges, a stripped copy.
  badinput -- a non-ELF file, a truncated ELF, a missing file, an unknown
              format: each must fail with a clear message and a non-zero exit.
"""
import argparse
import csv
import io
import json
import os
import shutil
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

    # 1. Frames agree with gcc -fstack-usage for every static function.
    if args.su:
        su = read_su(args.su)
        check(len(su) >= len(names), ".su lists the fixture's functions")
        for name, (size, kind) in su.items():
            got = fr.get(name)
            if got is None:
                check(False, "%s from .su is listed" % name)
                continue
            if kind == "static":
                check(int(got["frame_bytes"]) == size,
                      "%s: frame %s bytes, gcc .su says %d" % (name, got["frame_bytes"], size))
                check(got["dynamic"] == "false", "%s: not dynamic" % name)
            else:
                check(got["dynamic"] == "true", "%s: dynamic as .su says (%s)" % (name, kind))
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
        check(e["worst_bytes"] == sum(p["frame_bytes"] for p in e["path"]),
              "worker worst bytes are the sum of its path's frames")
        check(not e["unbounded"] and not e["unknown"], "worker's worst case is bounded and known")
        hand = HAND_CHECKED.get((args.compiler, args.opt))
        if hand:
            check(e["worst_bytes"] == hand["worker"],
                  "worker worst %d bytes, hand-checked %d" % (e["worst_bytes"], hand["worker"]))
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
        for cmd, message in cases:
            rc, out, err = run([args.callscope, "stack"] + cmd)
            check(rc != 0, "%s: non-zero exit (got %d)" % (cmd, rc))
            check(message in err, "%s: message contains '%s', got: %s" % (cmd, message, err.strip()))
            check(err.count("\n") <= 2, "%s: one clear message" % cmd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--callscope", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mode", choices=["fixture", "badinput"], default="fixture")
    ap.add_argument("--compiler", default="gcc")
    ap.add_argument("--opt", default="O0")
    ap.add_argument("--su")
    ap.add_argument("--edges")
    args = ap.parse_args()
    if args.mode == "fixture":
        fixture_mode(args)
    else:
        badinput_mode(args)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
