#include "text_trace.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "format/sys_events.h"
#include "format/trace_writer.h"

namespace callscope::golden {
namespace {

namespace fmt = callscope::format;

std::map<std::string, std::string> fields(std::istringstream& in) {
  std::map<std::string, std::string> f;
  std::string word;
  while (in >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) f[word] = "";
    else f[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return f;
}

uint64_t num(const std::string& s) { return std::stoull(s, nullptr, 0); }

// "ENOSPC" or "28": the errno of an untraced thread; 0 when unknown.
int errno_of(const std::string& s) {
  static const std::map<std::string, int> kNames = {
      {"ENOSPC", ENOSPC}, {"EMFILE", EMFILE}, {"ENFILE", ENFILE}, {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG},
      {"EACCES", EACCES}, {"EROFS", EROFS},   {"ENOMEM", ENOMEM}, {"EIO", EIO}};
  if (auto it = kNames.find(s); it != kNames.end()) return it->second;
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return static_cast<int>(std::stoi(s));
  return 0;
}

struct Event {
  uint32_t thread;
  fmt::EventKind kind;
  uint64_t tick, addr, sp, arg;
  uint8_t op;
};

// op= of a memory event: its short name (text_trace.h) or its number.
uint8_t alloc_op(const std::string& v) {
  static const std::map<std::string, fmt::AllocOp> names = {
      {"malloc", fmt::AllocOp::kMalloc},         {"calloc", fmt::AllocOp::kCalloc},
      {"realloc", fmt::AllocOp::kRealloc},       {"reallocarray", fmt::AllocOp::kReallocArray},
      {"posix_memalign", fmt::AllocOp::kPosixMemalign}, {"aligned_alloc", fmt::AllocOp::kAlignedAlloc},
      {"memalign", fmt::AllocOp::kMemalign},     {"valloc", fmt::AllocOp::kValloc},
      {"pvalloc", fmt::AllocOp::kPvalloc},       {"new", fmt::AllocOp::kNew},
      {"new[]", fmt::AllocOp::kNewArray},        {"mmap", fmt::AllocOp::kMmap},
      {"mremap", fmt::AllocOp::kMremap},         {"api", fmt::AllocOp::kApi},
      {"move-failed", fmt::AllocOp::kMoveFailed},
      {"free", fmt::AllocOp::kFree},             {"realloc-free", fmt::AllocOp::kReallocFree},
      {"delete", fmt::AllocOp::kDelete},         {"delete[]", fmt::AllocOp::kDeleteArray},
      {"munmap", fmt::AllocOp::kMunmap},         {"mremap-free", fmt::AllocOp::kMremapFree},
      {"api-free", fmt::AllocOp::kApiFree}};
  auto it = names.find(v);
  if (it != names.end()) return static_cast<uint8_t>(it->second);
  return static_cast<uint8_t>(std::stoul(v));
}

// Profile mode: a snapshot and the trees of its threads.
struct Snapshot {
  fmt::DumpRecord record{};
  std::map<uint32_t, std::vector<fmt::ProfileNodeRecord>> trees;  // thread index -> nodes, root first
};

fmt::ProfileNodeRecord root_node() {
  fmt::ProfileNodeRecord r{};
  r.min = ~uint64_t{0};
  r.first_tick = ~uint64_t{0};
  return r;
}

}  // namespace

Status text_to_trace(const std::string& text, const std::string& out_path) {
  fmt::FileHeader fh{};
  std::memcpy(fh.magic, fmt::kTraceMagic, sizeof fh.magic);
  fh.version_major = fmt::kTraceVersionMajor;
  fh.version_minor = fmt::kTraceVersionMinor;
  fh.header_size = sizeof fh;
  fh.clock = static_cast<uint32_t>(fmt::ClockKind::kMonotonic);
  fh.ticks_per_ns = 1.0;
  std::vector<fmt::ProcessRecord> procs;
  std::vector<fmt::ModuleRecord> mods;
  std::vector<fmt::ThreadRecord> threads;
  fmt::StringTable pstr, mstr, tstr, istr;
  std::vector<Event> events;
  fmt::InfoRecord info{};
  std::string info_argv;
  std::string block_devices;  // "MAJOR:MINOR NAME" lines
  std::vector<Snapshot> snapshots;
  std::vector<fmt::MarkRecord> marks;
  fmt::StringTable kstr;
  std::vector<std::pair<uint64_t, uint64_t>> declared_span;  // per thread: start=, end=
  std::map<size_t, uint64_t> proc_end;                        // per process: end=
  std::map<uint32_t, std::vector<fmt::SysEvent>> sys_events;  // per thread

  std::istringstream lines(text);
  std::string line;
  int n = 0;
  bool unchecked = false;  // `unchecked`: indexes written as given (crafted damage)
  static const std::map<std::string, fmt::EventKind> kinds = {
      {"entry", fmt::EventKind::kEntry},         {"exit", fmt::EventKind::kExit},
      {"unwound", fmt::EventKind::kExitUnwound}, {"truncated", fmt::EventKind::kExitTruncated},
      {"stray", fmt::EventKind::kExitStray},     {"lost", fmt::EventKind::kLost},
      {"pause", fmt::EventKind::kPause},         {"resume", fmt::EventKind::kResume},
      {"inherited", fmt::EventKind::kEntryInherited}, {"mark", fmt::EventKind::kMark},
      {"alloc", fmt::EventKind::kAlloc},         {"free", fmt::EventKind::kFree},
      {"tag", fmt::EventKind::kTag},             {"wait", fmt::EventKind::kWait}};
  while (std::getline(lines, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream in(line);
    std::string head;
    if (!(in >> head)) continue;
    const std::string where = "line " + std::to_string(n);
    try {
      if (head == "unchecked") {
        unchecked = true;
      } else if (head == "clock") {
        std::string c;
        in >> c;
        if (c == "tsc") {
          fh.clock = static_cast<uint32_t>(fmt::ClockKind::kTsc);
          in >> fh.ticks_per_ns;
        } else if (c != "monotonic") {
          return Error(where + ": clock is 'monotonic' or 'tsc TICKS_PER_NS'");
        }
      } else if (head == "process") {
        auto f = fields(in);
        fmt::ProcessRecord p{};
        p.pid = static_cast<uint32_t>(num(f["pid"]));
        p.ppid = static_cast<uint32_t>(num(f["ppid"]));
        p.parent_index = f.count("parent") ? static_cast<int32_t>(num(f["parent"])) : -1;
        p.incarnation = f.count("incarnation") ? static_cast<uint32_t>(num(f["incarnation"])) : 0;
        p.start_tick = f.count("start") ? num(f["start"]) : 0;
        if (f.count("end")) proc_end[procs.size()] = num(f["end"]);
        p.exe = pstr.add(f["exe"]);
        std::string argv = f["argv"];
        for (char& c : argv) if (c == ',') c = '\0';
        p.cmdline = pstr.add(argv);
        if (f.count("exit")) {
          p.how = static_cast<uint32_t>(fmt::ExitHow::kExited);
          p.code = static_cast<int32_t>(num(f["exit"]));
        } else if (f.count("signal")) {
          p.how = static_cast<uint32_t>(fmt::ExitHow::kSignaled);
          p.signal = static_cast<int32_t>(num(f["signal"]));
        } else if (f.count("exec")) {
          p.how = static_cast<uint32_t>(fmt::ExitHow::kExec);
        }
        if (procs.empty()) {
          info.main_pid = p.pid;
          info.main_how = p.how;
          info.main_code = p.code;
          info.main_signal = p.signal;
          info_argv = argv;
        }
        procs.push_back(p);
      } else if (head == "module") {
        auto f = fields(in);
        fmt::ModuleRecord m{};
        m.process_index = static_cast<uint32_t>(num(f["process"]));
        m.low = num(f["low"]);
        m.high = num(f["high"]);
        m.load_bias = num(f["bias"]);
        m.path = mstr.add(f["path"]);
        if (f.count("unloaded")) {
          m.flags = fmt::kModuleUnloaded;
          m.unload_tick = num(f["unloaded"]);
        }
        const std::string& id = f["build_id"];
        for (size_t i = 0; i + 1 < id.size() && i / 2 < sizeof m.build_id; i += 2)
          m.build_id[m.build_id_len++] = static_cast<uint8_t>(std::stoul(id.substr(i, 2), nullptr, 16));
        mods.push_back(m);
      } else if (head == "thread") {
        auto f = fields(in);
        fmt::ThreadRecord t{};
        t.process_index = static_cast<uint32_t>(num(f["process"]));
        t.tid = static_cast<uint32_t>(num(f["tid"]));
        t.name = tstr.add(f["name"]);
        if (f.count("untraced")) {
          const int e = errno_of(f["untraced"]);
          if (e <= 0) return Error(where + ": untraced= takes an errno name (ENOSPC, EMFILE, ...) or number, not '" +
                                   f["untraced"] + "'");
          t.flags |= fmt::kThreadUntraced;
          t.untraced_error = e;
        }
        if (f.count("unwound")) {  // record --memory --unwind: its calls are frames seen at allocations
          t.flags |= fmt::kThreadUnwound;
          info.flags |= fmt::kInfoUnwound;
        }
        threads.push_back(t);
        declared_span.emplace_back(f.count("start") ? num(f["start"]) : 0, f.count("end") ? num(f["end"]) : 0);
      } else if (head == "sys") {
        // sys THREAD KIND NS [cpu=N] [state=MASK] [nr=N] [args=A,B,...] [ret=N] [waker=TID]
        //     [waker_pid=PID] [count=N] [addr=A ip=IP] [major] [kernel] [period=NS]
        //     [dev=DEV sector=S bytes=B] [write] [flush] [sync] [meta] [error=E] [at=ADDR]: the kernel's
        //     events (kSysEvents), NS on the trace's clock; KIND io a block request begun, iodone its
        //     completion; caller (at=ADDR) a frame of the sample before it, 0: the outer ones not known.
        uint32_t thread = 0;
        std::string kind;
        fmt::SysEvent e;
        if (!(in >> thread >> kind >> e.mono_ns)) return Error(where + ": sys THREAD KIND NS");
        static const std::map<std::string, fmt::SysKind> sys_kinds = {
            {"out", fmt::SysKind::kSwitchOutBlocked}, {"preempt", fmt::SysKind::kSwitchOutRunnable},
            {"in", fmt::SysKind::kSwitchIn},          {"lost", fmt::SysKind::kLost},
            {"state", fmt::SysKind::kSleepState},     {"wakeup", fmt::SysKind::kWakeup},
            {"enter", fmt::SysKind::kSyscallEnter},   {"exit", fmt::SysKind::kSyscallExit},
            {"fault", fmt::SysKind::kPageFault},      {"sample", fmt::SysKind::kSample},
            {"io", fmt::SysKind::kIoStart},           {"iodone", fmt::SysKind::kIoDone},
            {"caller", fmt::SysKind::kSampleCaller}};
        auto k = sys_kinds.find(kind);
        if (k == sys_kinds.end()) return Error(where + ": unknown sys kind '" + kind + "'");
        e.kind = k->second;
        for (auto& [key, value] : fields(in)) {
          if (key == "cpu" || key == "state" || key == "nr" || key == "count" || key == "waker" || key == "addr" ||
              key == "dev" || key == "at") {
            e.arg = num(value);
          } else if (key == "sector" || key == "bytes") {
            e.args[key == "sector" ? 0 : 1] = num(value);
          } else if (key == "write" || key == "flush" || key == "sync" || key == "meta") {
            e.value |= static_cast<int64_t>(key == "write"   ? fmt::kIoWrite
                                            : key == "flush" ? fmt::kIoFlush
                                            : key == "sync"  ? fmt::kIoSync
                                                             : fmt::kIoMeta);
          } else if (key == "ret" || key == "error") {
            e.value = std::stoll(value, nullptr, 0);
          } else if (key == "waker_pid") {
            e.value = static_cast<int64_t>(num(value));
          } else if (key == "ip") {
            (e.kind == fmt::SysKind::kSample ? e.arg : e.args[0]) = num(value);
          } else if (key == "period") {  // a sample's: period * 2, + 1 in the kernel
            e.value += static_cast<int64_t>(num(value) * 2);
          } else if (key == "major" || key == "kernel") {
            if (e.kind == fmt::SysKind::kSample) e.value += 1;
            else e.value |= static_cast<int64_t>(key == "major" ? fmt::kFaultMajor : fmt::kFaultInKernel);
          } else if (key == "args") {
            std::istringstream a(value);
            std::string one;
            for (size_t i = 0; i < 6 && std::getline(a, one, ','); ++i) e.args[i] = num(one);
          } else {
            return Error(where + ": unknown field '" + key + "'");
          }
        }
        if (thread >= threads.size()) return Error(where + ": thread " + std::to_string(thread) + " not declared");
        sys_events[thread].push_back(e);
      } else if (head == "device") {
        // device MAJOR:MINOR NAME: a block device of the io events (InfoRecord.block_devices).
        std::string numbers, name;
        if (!(in >> numbers >> name) || numbers.find(':') == std::string::npos)
          return Error(where + ": device MAJOR:MINOR NAME");
        block_devices += numbers + " " + name + "\n";
      } else if (head == "events") {
        // events [syscalls] [faults] [io] [noswitches]: the event groups record --events recorded
        // (kInfoEventGroups and the flags after it), and whether without context switches.
        info.flags |= fmt::kInfoEventGroups;
        for (auto& [key, value] : fields(in)) {
          if (key == "syscalls") info.flags |= fmt::kInfoSyscalls;
          else if (key == "faults") info.flags |= fmt::kInfoFaults;
          else if (key == "io") info.flags |= fmt::kInfoIo;
          else if (key == "noswitches") info.flags |= fmt::kInfoNoSwitches;
          else return Error(where + ": events takes syscalls, faults, io, noswitches; not '" + key + "'");
        }
      } else if (head == "mode") {
        auto f = fields(in);
        if (f.count("profile")) info.flags |= fmt::kInfoProfile;
        else if (!f.count("record")) return Error(where + ": mode is 'profile' or 'record', then maybe 'filtered'");
        if (f.count("filtered")) info.flags |= fmt::kInfoFiltered;
      } else if (head == "snapshot") {
        auto f = fields(in);
        Snapshot snap;
        snap.record.process_index = static_cast<uint32_t>(num(f["process"]));
        snap.record.seq = static_cast<uint32_t>(num(f["seq"]));
        snap.record.reason = static_cast<uint32_t>(num(f["reason"]));
        snap.record.tick = num(f["tick"]);
        if (snap.record.process_index >= procs.size() && !unchecked)
          return Error(where + ": process " + std::to_string(snap.record.process_index) + " not declared");
        snapshots.push_back(std::move(snap));
        info.flags |= fmt::kInfoProfile;
      } else if (head == "node") {
        auto f = fields(in);
        if (snapshots.empty()) return Error(where + ": a node before any snapshot");
        const auto thread = static_cast<uint32_t>(num(f["thread"]));
        if (thread >= threads.size() && !unchecked)
          return Error(where + ": thread " + std::to_string(thread) + " not declared");
        auto& nodes = snapshots.back().trees[thread];
        if (nodes.empty()) nodes.push_back(root_node());
        fmt::ProfileNodeRecord r = root_node();
        r.fn = num(f["fn"]);
        r.parent = f.count("parent") ? static_cast<uint32_t>(num(f["parent"])) : 0;
        if (r.parent >= nodes.size())
          return Error(where + ": parent " + std::to_string(r.parent) + " is not an earlier node of this tree");
        for (const auto& [key, value] : f) {
          if (key == "calls") r.calls = num(value);
          else if (key == "total") r.total = num(value);
          else if (key == "self") r.self = num(value);
          else if (key == "min") r.min = num(value);
          else if (key == "max") r.max = num(value);
          else if (key == "first") r.first = num(value);
          else if (key == "first_tick") r.first_tick = num(value);
          else if (key == "excluded") r.flags |= fmt::kProfNodeExcluded;
          else if (key == "open") r.flags |= fmt::kProfNodeOpen;
          else if (key != "thread" && key != "fn" && key != "parent") return Error(where + ": unknown field '" + key + "'");
        }
        nodes.push_back(r);
      } else if (head == "mark") {
        // text= takes the rest of the line, spaces included.
        const size_t at = line.find("text=");
        std::string mark_text = at == std::string::npos ? "" : line.substr(at + 5);
        while (!mark_text.empty() && (mark_text.back() == ' ' || mark_text.back() == '\t' || mark_text.back() == '\r'))
          mark_text.pop_back();
        std::istringstream rest(at == std::string::npos ? line : line.substr(0, at));
        std::string skip;
        rest >> skip;
        auto f = fields(rest);
        fmt::MarkRecord m{};
        m.process_index = static_cast<uint32_t>(num(f["process"]));
        m.thread_index = f.count("thread") ? static_cast<uint32_t>(num(f["thread"])) : ~0u;
        m.tick = num(f["tick"]);
        m.id = static_cast<uint32_t>(num(f["id"]));
        if (f.count("kind")) {
          if (f["kind"] == "tag") m.kind = fmt::kMarkKindTag;
          else if (f["kind"] != "mark") return Error(where + ": kind is mark or tag, not '" + f["kind"] + "'");
        }
        m.text = kstr.add(mark_text);
        if (m.process_index >= procs.size() && !unchecked)
          return Error(where + ": process " + std::to_string(m.process_index) + " not declared");
        if (m.thread_index != ~0u && m.thread_index >= threads.size() && !unchecked)
          return Error(where + ": thread " + std::to_string(m.thread_index) + " not declared");
        marks.push_back(m);
      } else {
        Event e{};
        e.thread = static_cast<uint32_t>(num(head));
        std::string kind;
        in >> kind;
        auto k = kinds.find(kind);
        if (k == kinds.end()) return Error(where + ": unknown event kind '" + kind + "'");
        e.kind = k->second;
        std::string tick;
        if (!(in >> tick)) return Error(where + ": event without a tick");
        e.tick = num(tick);
        auto f = fields(in);
        for (const auto& [key, value] : f) {
          if (key == "sp") e.sp = num(value);
          else if (key == "count" || key == "id" || key == "size" || key == "ticks") e.arg = num(value);
          else if (key == "op") e.op = alloc_op(value);
          else if (value.empty()) e.addr = num(key);
          else return Error(where + ": unknown field '" + key + "'");
        }
        if (e.thread >= threads.size()) return Error(where + ": thread " + std::to_string(e.thread) + " not declared");
        events.push_back(e);
      }
    } catch (const std::exception&) {
      return Error(where + ": bad number in '" + line + "'");
    }
  }

  CALLSCOPE_TRY(auto writer, fmt::TraceWriter::create(out_path, fh, 3));
  std::vector<std::unique_ptr<fmt::EventEncoder>> enc;
  std::vector<size_t> depth(threads.size(), 0);
  for (uint32_t i = 0; i < threads.size(); ++i) enc.push_back(std::make_unique<fmt::EventEncoder>(*writer, i));
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    fmt::ThreadRecord& t = threads[e.thread];
    if (t.flags & fmt::kThreadUntraced)
      return Error("event " + std::to_string(i + 1) + ": thread " + std::to_string(e.thread) +
                   " is untraced: it has no events");
    if (t.events == 0) t.start_tick = e.tick;
    if (e.tick < t.end_tick) return Error("event " + std::to_string(i + 1) + ": ticks of a thread must not decrease");
    t.end_tick = e.tick;
    ++t.events;
    if (e.kind == fmt::EventKind::kEntry) ++t.calls;
    if (e.kind == fmt::EventKind::kLost) t.lost_events += e.arg;
    if (fmt::is_entry(e.kind)) ++depth[e.thread];
    if (fmt::is_exit(e.kind)) {
      if (depth[e.thread] == 0) return Error("event " + std::to_string(i + 1) + ": exit with no open frame");
      --depth[e.thread];
    }
    if (fmt::is_memory(e.kind)) {
      CALLSCOPE_CHECK(enc[e.thread]->memory(e.kind, e.tick, e.addr, e.arg, e.op));
    } else {
      CALLSCOPE_CHECK(enc[e.thread]->add(e.kind, e.tick, e.addr, e.sp, e.arg));
    }
  }
  uint64_t total = 0, last = 0;
  for (uint32_t i = 0; i < threads.size(); ++i) {
    CALLSCOPE_CHECK(enc[i]->flush());
    threads[i].blocks = enc[i]->blocks();
    // An untraced thread's end is unknown: finalize gives it its start.
    if (!(threads[i].flags & fmt::kThreadUntraced)) threads[i].flags |= fmt::kThreadExitedCleanly;
    if (threads[i].events == 0) {
      threads[i].start_tick = declared_span[i].first;
      threads[i].end_tick = (threads[i].flags & fmt::kThreadUntraced) ? declared_span[i].first : declared_span[i].second;
    }
    total += threads[i].events;
    last = std::max(last, threads[i].end_tick);
  }

  for (auto& [thread, evs] : sys_events) {
    // In time order, as the recorder writes them (a case lists them by kind).
    std::stable_sort(evs.begin(), evs.end(),
                     [](const fmt::SysEvent& a, const fmt::SysEvent& b) { return a.mono_ns < b.mono_ns; });
    CALLSCOPE_CHECK(writer->write_block(fmt::BlockType::kSysEvents, threads[thread].tid,
                                        static_cast<uint32_t>(evs.size()), evs.front().mono_ns,
                                        fmt::encode_sys_events(evs), procs.at(threads[thread].process_index).pid));
  }
  // Profile mode: the trees, as finalize writes them (after the events).
  std::vector<fmt::DumpRecord> dumps;
  for (uint32_t d = 0; d < snapshots.size(); ++d) {
    Snapshot& snap = snapshots[d];
    snap.record.threads = static_cast<uint32_t>(snap.trees.size());
    for (const auto& [thread, nodes] : snap.trees) {
      std::vector<uint8_t> raw(nodes.size() * sizeof(fmt::ProfileNodeRecord));
      std::memcpy(raw.data(), nodes.data(), raw.size());
      CALLSCOPE_CHECK(writer->write_block(fmt::BlockType::kProfile, thread, static_cast<uint32_t>(nodes.size()),
                                          snap.record.tick, raw, d));
      if (snap.record.reason == 4 && thread < threads.size()) {  // a final state: the thread's calls
        uint64_t calls = 0;
        for (size_t k = 1; k < nodes.size(); ++k) calls += nodes[k].calls;
        threads[thread].calls = std::max(threads[thread].calls, calls);
      }
    }
    dumps.push_back(snap.record);
    last = std::max(last, snap.record.tick);
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const fmt::MarkRecord& a, const fmt::MarkRecord& b) { return a.tick < b.tick; });
  for (size_t i = 0; i < procs.size(); ++i) procs[i].end_tick = proc_end.count(i) ? proc_end[i] : last;
  info.duration_ticks = last;
  info.cmdline = istr.add(info_argv);
  info.cwd = istr.add("/golden");
  if (!block_devices.empty()) info.block_devices = istr.add(block_devices);
  info.tool_version = istr.add("callscope golden");
  CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kInfo, std::vector<fmt::InfoRecord>{info}, istr));
  CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kProcesses, procs, pstr));
  CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kModules, mods, mstr));
  CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kThreads, threads, tstr));
  if (!dumps.empty()) CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kDumps, dumps, fmt::StringTable()));
  if (!marks.empty()) CALLSCOPE_CHECK(writer->write_records(fmt::BlockType::kMarks, marks, kstr));
  return writer->finish(fmt::EndRecord{total, writer->blocks_written() + 1});
}

}  // namespace callscope::golden
