#!/usr/bin/env python3
"""An independent reader of callscope's exports, for the end-to-end tests.

    export_reader.py FORMAT FILE PROTO_DIR [--located]

reads FILE as FORMAT (perfetto, chrome, speedscope, folded, pprof) with
nothing of callscope's code -- protobuf through `protoc --decode` and
callscope's schemas in PROTO_DIR, JSON through Python's json -- checks what
the format demands (slices nested, names interned before use, timestamps
never going back, frames in range), and prints one line per call path:

    THREAD;f1;f2;...;fn CALLS

THREAD is the thread's # in `callscope info` (taken from the thread names
the exports write: "[thread N...]", "name (N)", "thread N"), or "all" for a
merged tree. Lines are sorted. A failed check exits 1 with the reason.
--located: perfetto must give some slice a source location (file:line).
FORMAT pprof:TYPE sums the values of sample type TYPE (alloc_space, ...)
instead of calls; perfetto:states counts each thread's CPU state slices by
name ("THREAD;Sleeping: futex COUNT") instead of its call paths;
perfetto:kernel every track of the kernel's under a thread, its slices and
instants by name ("THREAD;System calls;read COUNT")."""

import gzip
import json
import re
import subprocess
import sys
import zlib
from collections import Counter


def fail(why):
    sys.stderr.write("export_reader: " + why + "\n")
    sys.exit(1)


def thread_key(label):
    for pat in (r"^\[thread (\d+)", r"\((\d+)\)$", r"^thread (\d+)$"):
        m = re.search(pat, label)
        if m:
            return m.group(1)
    fail("no thread number in %r" % label)


# ---- protoc's text format, parsed into nested lists of (name, value) ----

TOKEN = re.compile(r'\s*(?:(\})|([A-Za-z_][A-Za-z0-9_]*)\s*(\{|:\s*("(?:[^"\\]|\\.)*"|[^\s]+)))')


def unescape(s):
    # protoc writes C escapes (octal for bytes that are not printable)
    out = bytearray()
    i = 0
    b = s.encode("latin-1", "backslashreplace")
    while i < len(b):
        c = b[i]
        if c == 0x5C:  # backslash
            n = b[i + 1]
            if 0x30 <= n <= 0x37:
                j = i + 1
                while j < len(b) and j < i + 4 and 0x30 <= b[j] <= 0x37:
                    j += 1
                out.append(int(b[i + 1:j], 8))
                i = j
                continue
            out.append({ord("n"): 10, ord("t"): 9, ord("r"): 13}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def parse_text(text):
    root = []
    stack = [root]
    pos = 0
    while True:
        m = TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip():
                fail("cannot parse protoc output near %r" % text[pos:pos + 60])
            break
        pos = m.end()
        if m.group(1):
            stack.pop()
        elif m.group(3) == "{":
            child = []
            stack[-1].append((m.group(2), child))
            stack.append(child)
        else:
            v = m.group(4)
            if v.startswith('"'):
                v = unescape(v[1:-1])
            elif v in ("true", "false"):
                v = v == "true"
            elif re.match(r"^-?\d+$", v):
                v = int(v)
            stack[-1].append((m.group(2), v))
    return root


def get(msg, name, default=None):
    for k, v in msg:
        if k == name:
            return v
    return default


def all_of(msg, name):
    return [v for k, v in msg if k == name]


def protoc(proto_dir, proto, message, data):
    r = subprocess.run(["protoc", "--proto_path=" + proto_dir, "--decode=" + message, proto],
                       input=data, capture_output=True)
    if r.returncode != 0:
        fail("protoc --decode=%s failed: %s" % (message, r.stderr.decode(errors="replace")))
    return parse_text(r.stdout.decode("utf-8", "replace"))


# ---- the protobuf wire format, only to open compressed_packets ----

def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            fail("wire type %d in the trace" % wt)
        yield f, wt, v


def inflate_packets(data):
    """The trace with every compressed_packets (field 50) expanded in place."""
    out = bytearray()
    for f, wt, v in fields(data):
        if f != 1 or wt != 2:
            fail("a Trace holds only packets (field 1), found field %d" % f)
        inner = list(fields(v))
        if any(x[0] == 50 for x in inner):
            if len(inner) != 1:
                fail("a packet with compressed_packets holds other fields")
            chunk = zlib.decompress(inner[0][2])
            for g, _, _ in fields(chunk):
                if g != 1:
                    fail("compressed_packets holds field %d, not packets" % g)
            out += chunk
        else:
            out += b"\x0a" + encode_varint(len(v)) + v
    return bytes(out)


def encode_varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# ---- the formats ----

def read_perfetto(path, proto_dir, states=False, kernel=False):
    """The call paths; with `states`, each thread's CPU-state slices
    instead ("THREAD;Running COUNT"), checked to tile its track: never
    nested, never overlapping, each ended; with `kernel`, the slices and
    instants of every track of the kernel's under a thread ("THREAD;System
    calls;read COUNT"), each track's never overlapping."""
    data = inflate_packets(open(path, "rb").read())
    trace = protoc(proto_dir, "perfetto_trace.proto", "perfetto.protos.Trace", data)
    tracks = {}  # uuid -> thread key
    state_tracks = {}  # uuid -> the thread key of its parent
    kernel_tracks = {}  # uuid -> "THREAD;TRACK NAME", every track under a thread's
    kernel_counts = Counter()
    seqs = {}    # sequence -> state
    counts = Counter()
    state_counts = Counter()
    for _, p in trace:
        seq = get(p, "trusted_packet_sequence_id")
        if not seq:
            fail("a packet without trusted_packet_sequence_id")
        td = get(p, "track_descriptor")
        if td is not None:
            th = get(td, "thread")
            if th is not None:
                tracks[get(td, "uuid")] = thread_key(get(th, "thread_name"))
            elif get(td, "parent_uuid") is not None and get(td, "name"):
                if get(td, "parent_uuid") not in tracks:
                    fail("a track of the kernel's before its thread's track")
                kernel_tracks[get(td, "uuid")] = tracks[get(td, "parent_uuid")] + ";" + get(td, "name")
                if get(td, "name") == "CPU state":
                    state_tracks[get(td, "uuid")] = tracks[get(td, "parent_uuid")]
            continue
        st = seqs.get(seq)
        if get(p, "clock_snapshot") is not None:
            if get(p, "sequence_flags") != 1:
                fail("sequence %d: the first packet does not clear incremental state" % seq)
            d = get(p, "trace_packet_defaults")
            if get(d, "timestamp_clock_id") != 64:
                fail("sequence %d: timestamps are not on clock 64" % seq)
            clocks = all_of(get(p, "clock_snapshot"), "clocks")
            if sorted(get(c, "clock_id") for c in clocks) != [6, 64] or not any(get(c, "is_incremental") for c in clocks):
                fail("sequence %d: clock 64 is not defined as incremental against BOOTTIME" % seq)
            seqs[seq] = st = {"track": get(get(d, "track_event_defaults"), "track_uuid"), "names": {},
                              "categories": {}, "locations": {}, "located": 0, "ts": 0, "stack": []}
            continue
        if st is None:
            fail("sequence %d: an event before the sequence's first packet" % seq)
        idata = get(p, "interned_data")
        if idata is not None:
            for e in all_of(idata, "event_names"):
                st["names"][get(e, "iid")] = get(e, "name")
            for e in all_of(idata, "event_categories"):
                st["categories"][get(e, "iid")] = get(e, "name")
            for e in all_of(idata, "source_locations"):
                if not get(e, "file_name") or not get(e, "function_name"):
                    fail("sequence %d: a source location without file or function" % seq)
                st["locations"][get(e, "iid")] = get(e, "file_name")
        ev = get(p, "track_event")
        if ev is None:
            continue
        st["ts"] += get(p, "timestamp", 0)
        kind = get(ev, "type")
        if st["track"] in kernel_tracks:
            if kind == "TYPE_INSTANT":
                kernel_counts[kernel_tracks[st["track"]] + ";" + get(ev, "name")] += 1
            elif kind == "TYPE_SLICE_BEGIN":
                if st["stack"]:
                    fail("sequence %d: slices of the kernel's track %s overlap" % (seq, kernel_tracks[st["track"]]))
                st["stack"].append(get(ev, "name"))
                kernel_counts[kernel_tracks[st["track"]] + ";" + get(ev, "name")] += 1
                if st["track"] in state_tracks:
                    state_counts[state_tracks[st["track"]] + ";" + get(ev, "name")] += 1
            elif kind == "TYPE_SLICE_END":
                if not st["stack"]:
                    fail("sequence %d: an end without a begin" % seq)
                st["stack"].pop()
            continue
        if kind == "TYPE_SLICE_BEGIN":
            iid = get(ev, "name_iid")
            if iid not in st["names"]:
                fail("sequence %d: name_iid %s used before it was interned" % (seq, iid))
            cats = all_of(ev, "category_iids")
            if len(cats) != 1 or cats[0] not in st["categories"]:
                fail("sequence %d: a slice without one interned category (its module)" % seq)
            loc = get(ev, "source_location_iid")
            if loc is not None and loc not in st["locations"]:
                fail("sequence %d: source_location_iid %s used before it was interned" % (seq, loc))
            st["located"] += loc is not None
            st["stack"].append(st["names"][iid])
            counts[";".join([tracks[st["track"]]] + st["stack"])] += 1
        elif kind == "TYPE_SLICE_END":
            if not st["stack"]:
                fail("sequence %d: an end without a begin" % seq)
            st["stack"].pop()
    for seq, st in seqs.items():
        if st["stack"]:
            fail("sequence %d: %d slices never ended" % (seq, len(st["stack"])))
    if EXPECT_LOCATIONS and not any(st["located"] for st in seqs.values()):
        fail("no slice has a source location (the program was built with -g)")
    return kernel_counts if kernel else state_counts if states else counts


def read_chrome(path, _):
    """Chrome's trace events as a viewer reads them: times are JSON numbers,
    doubles (as in JavaScript), and every thread's slices must nest exactly
    in those doubles, with no tolerance: a callee within its caller, a call
    ending before the next one begins. Slices are B/E pairs, which must come
    in the order of their times and close the open begin of the same name,
    or X events, whose end is ts + dur added in doubles as the viewers add
    it; a thread holds one kind or the other."""
    d = json.load(open(path))
    names, per_tid = {}, {}
    for e in d["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = thread_key(e["args"]["name"])
        elif e["ph"] in ("B", "E", "X"):
            per_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    counts = Counter()
    for key, evs in per_tid.items():
        if key not in names:
            fail("pid %s tid %s has slices but no thread_name" % key)
        kinds = set(e["ph"] for e in evs)
        if "X" in kinds and len(kinds) > 1:
            fail("thread %s mixes X events with B/E pairs" % names[key])
        nest = nest_complete if "X" in kinds else nest_begin_end
        for stack in nest(names[key], evs):
            counts[";".join([names[key]] + stack)] += 1
    return counts


def nest_begin_end(thread, evs):
    """The call path of each B, in the file's order; checks the pairs."""
    stack, last = [], None
    for e in evs:
        if last is not None and e["ts"] < last:
            fail("thread %s: %s at ts %r goes back in time (after %r)" % (thread, e["ph"], e["ts"], last))
        last = e["ts"]
        if e["ph"] == "B":
            stack.append(e["name"])
            yield list(stack)
        elif not stack:
            fail("thread %s: an end of %s at ts %r without a begin" % (thread, e.get("name"), e["ts"]))
        elif e.get("name") != stack[-1]:
            fail("thread %s: the end of %s at ts %r while %s is open" % (thread, e.get("name"), e["ts"], stack[-1]))
        else:
            stack.pop()
    if stack:
        fail("thread %s: %d slices never ended (%s)" % (thread, len(stack), ";".join(stack)))


def nest_complete(thread, evs):
    """The call path of each X, by start (the longer first at equal starts);
    a slice that begins at or after the end of the open one is its sibling.
    A slice of length 0 at its caller's end is ambiguous in this form: a
    viewer takes it for the caller's sibling, and so does this."""
    stack = []  # (end, name)
    for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
        end = e["ts"] + e["dur"]
        while stack and stack[-1][0] <= e["ts"]:
            stack.pop()
        if stack and end > stack[-1][0]:
            fail("thread %s: %s [%r, %r] ends after its caller %s (ends %r)"
                 % (thread, e["name"], e["ts"], end, stack[-1][1], stack[-1][0]))
        stack.append((end, e["name"]))
        yield [n for _, n in stack]


def read_speedscope(path, _):
    d = json.load(open(path))
    frames = d["shared"]["frames"]
    counts = Counter()
    for p in d["profiles"]:
        t = thread_key(p["name"]) if p["name"] != "all threads" else "all"
        if p["type"] == "evented":
            stack, last = [], p["startValue"]
            for e in p["events"]:
                if e["at"] < last:
                    fail("profile %s: events go back in time" % p["name"])
                last = e["at"]
                if not 0 <= e["frame"] < len(frames):
                    fail("profile %s: frame %d out of range" % (p["name"], e["frame"]))
                if e["type"] == "O":
                    stack.append(frames[e["frame"]]["name"])
                    counts[";".join([t] + stack)] += 1
                else:
                    if not stack or stack[-1] != frames[e["frame"]]["name"]:
                        fail("profile %s: a close that does not match the open frame" % p["name"])
                    stack.pop()
            if stack or last > p["endValue"]:
                fail("profile %s: frames left open or events past endValue" % p["name"])
        else:
            if len(p["samples"]) != len(p["weights"]):
                fail("profile %s: samples and weights differ in number" % p["name"])
            for s in p["samples"]:
                counts[";".join([t] + [frames[i]["name"] for i in s])] += 1  # paths with self time
    return counts


def read_folded(path, _):
    counts = Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        t = thread_key(frames[0]) if frames[0].startswith("[thread ") else None
        counts[";".join(([t] + frames[1:]) if t else (["all"] + frames))] += int(n)
    return counts


def read_pprof(path, proto_dir, value="calls"):
    data = gzip.decompress(open(path, "rb").read())
    p = protoc(proto_dir, "pprof_profile.proto", "perftools.profiles.Profile", data)
    strings = all_of(p, "string_table")
    if not strings or strings[0] != "":
        fail("the string table does not begin with \"\"")
    types = [strings[get(v, "type")] for v in all_of(p, "sample_type")]
    if value not in types:
        fail("no %r sample type: %s" % (value, types))
    fn = {get(f, "id"): strings[get(f, "name")] for f in all_of(p, "function")}
    loc = {}
    for l in all_of(p, "location"):
        lines = all_of(l, "line")
        if len(lines) != 1 or get(lines[0], "function_id") not in fn:
            fail("location %s does not name one known function" % get(l, "id"))
        loc[get(l, "id")] = fn[get(lines[0], "function_id")]
    counts = Counter()
    for s in all_of(p, "sample"):
        ids = all_of(s, "location_id")
        values = all_of(s, "value")
        if len(values) != len(types):
            fail("a sample has %d values for %d types" % (len(values), len(types)))
        t = "all"
        for lab in all_of(s, "label"):
            if strings[get(lab, "key")] == "thread":
                t = thread_key(strings[get(lab, "str")])
        v = values[types.index(value)]
        if v:
            counts[";".join([t] + [loc[i] for i in reversed(ids)])] += v
    return counts


EXPECT_LOCATIONS = False


def main():
    global EXPECT_LOCATIONS
    if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and sys.argv[4] != "--located"):
        fail("usage: export_reader.py FORMAT FILE PROTO_DIR [--located]")
    fmt, path, proto_dir = sys.argv[1:4]
    EXPECT_LOCATIONS = len(sys.argv) == 5
    reader = {"perfetto": read_perfetto, "chrome": read_chrome, "speedscope": read_speedscope,
              "folded": read_folded, "pprof": read_pprof}.get(fmt.split(":")[0])
    if not reader:
        fail("unknown format " + fmt)
    if fmt == "perfetto:states":  # each thread's CPU state slices by name
        reader = lambda path, proto_dir: read_perfetto(path, proto_dir, True)
    elif fmt == "perfetto:kernel":  # every track of the kernel's: its slices and instants by name
        reader = lambda path, proto_dir: read_perfetto(path, proto_dir, False, True)
    elif ":" in fmt:  # pprof:TYPE: that sample type's values instead of calls
        value = fmt.split(":", 1)[1]
        reader = lambda path, proto_dir: read_pprof(path, proto_dir, value)
    for k, v in sorted(reader(path, proto_dir).items()):
        print("%s %d" % (k, v))


if __name__ == "__main__":
    main()
