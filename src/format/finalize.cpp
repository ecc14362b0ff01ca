#include "format/finalize.h"

#include <cpuid.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "format/live_stream.h"
#include "format/profile_math.h"
#include "format/raw_encoder.h"
#include "format/raw_session.h"
#include "format/resident.h"
#include "format/thread_names.h"
#include "format/trace_writer.h"

namespace callscope::format {
namespace {

uint64_t mono_now() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Calibration {
  ClockKind clock = ClockKind::kMonotonic;
  double ticks_per_ns = 1.0;
  uint64_t origin = 0;          // absolute clock value of trace tick 0
  uint64_t origin_mono_ns = 0;
};

// Fits ticks per ns through the two (tick, mono) pairs farthest apart. The
// TSC runs on after the program, so a pair sampled now gives a long baseline
// even for a program that was killed before it could write a second one.
Calibration calibrate(const RawSession& s) {
  Calibration c;
  std::vector<RawCalibration> pairs = s.calibrations;
  uint64_t origin = ~uint64_t{0};
  for (const RawProcess& p : s.processes) {
    if (!p.has_start) continue;
    c.clock = static_cast<ClockKind>(p.start.clock);
    origin = std::min(origin, p.start.base_tick);
    pairs.push_back({p.start.calib_tick, p.start.calib_mono_ns});
    pairs.insert(pairs.end(), p.calibrations.begin(), p.calibrations.end());
  }
  if (c.clock == ClockKind::kTsc) {
    ClockPair now = sample_clocks();
    pairs.push_back({now.tsc, now.mono_ns});
  }
  if (origin == ~uint64_t{0}) origin = pairs.empty() ? 0 : pairs.front().tick;
  // A trace streamed by `record` counts from the origin it chose before the
  // program started.
  if (s.stream) {
    c.clock = static_cast<ClockKind>(s.stream->clock);
    origin = s.stream->origin;
  }
  c.origin = origin;
  if (c.clock == ClockKind::kMonotonic) {
    c.ticks_per_ns = 1.0;
    c.origin_mono_ns = origin;
    return c;
  }
  auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end(), [](const RawCalibration& a, const RawCalibration& b) {
    return a.mono_ns < b.mono_ns;
  });
  if (lo != pairs.end() && hi->mono_ns > lo->mono_ns && hi->tick > lo->tick)
    c.ticks_per_ns = static_cast<double>(hi->tick - lo->tick) / static_cast<double>(hi->mono_ns - lo->mono_ns);
  const RawCalibration& ref = *lo;
  // The reference pair may predate the origin (the recorder samples one
  // before it starts the program): signed arithmetic.
  const double since_origin_ns =
      (static_cast<double>(ref.tick) - static_cast<double>(origin)) / c.ticks_per_ns;
  c.origin_mono_ns = static_cast<uint64_t>(static_cast<double>(ref.mono_ns) - since_origin_ns);
  return c;
}

struct ThreadOutcome {
  ThreadRecord record{};
  std::string name;
};

// Re-encodes one raw thread stream (raw_encoder.h says what that decides).
// `end_hint`: when the process ended, for a thread that did not exit cleanly.
Status encode_thread(RawThreadFile& file, uint64_t offset, uint64_t end_hint, std::span<const RawSwitch> switches,
                     EventEncoder& enc, ThreadOutcome& out) {
  RawStreamEncoder stream(enc, offset, out.record);
  CALLSCOPE_CHECK(stream.add_file(file));
  out.record.torn_events = file.torn_events();
  return stream.finish_thread(file.header(), end_hint, switches);
}

// The end of the open calls of a thread alive when its process ended, in
// the last snapshot: the stops and starts it never acted on (it made no
// call from the first of them on, asleep) leave their paused time out, as
// the runtime's snapshots do.
uint64_t end_of_open_calls(const RawTree& t, const std::vector<RawSwitch>& switches, uint64_t end) {
  if (t.switches_seen & 1) return end;  // stopped: its open calls were banked at the pause
  auto first = std::find_if(switches.begin(), switches.end(), [&](const RawSwitch& w) { return w.seq > t.switches_seen; });
  if (first == switches.end() || first->seq != t.switches_seen + 1) return end;
  const uint64_t n = static_cast<uint64_t>(switches.end() - first);
  for (uint64_t i = 0; i < n; ++i)
    if (first[i].seq != first->seq + i) return end;  // a record missing: nothing to go by
  return running_end(first->seq, first->seq + n - 1, end, [&](uint64_t k) { return first[k - first->seq].tick; });
}

void fill_exit(ProcessRecord& pr, ExitHow how, int32_t code, int32_t signal, uint32_t core) {
  pr.how = static_cast<uint32_t>(how);
  pr.code = code;
  pr.signal = signal;
  pr.core_dumped = core;
}

// "t123.1" of ".../t123.1.prof" or ".../t123.1.ev".
std::string stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.find_last_of('.'));
}

// A thread's tree as a kProfile block: raw ticks moved to trace ticks.
Status write_tree(TraceWriter& w, const RawTree& t, uint32_t thread, uint32_t dump, uint64_t tick, uint64_t offset,
                  uint64_t& calls) {
  std::vector<uint8_t> raw(t.nodes.size() * sizeof(ProfileNodeRecord));
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const RawProfNode& n = t.nodes[i];
    ProfileNodeRecord r{};
    r.fn = i == 0 ? 0 : n.fn;
    r.parent = i == 0 ? 0 : n.parent;
    r.flags = (n.flags & (kProfNodeExcluded | kProfNodeOpen)) |
              std::min<uint32_t>(n.inherited, 0xffff) << kProfNodeInheritedShift;
    r.calls = n.calls;
    r.total = n.total;
    r.self = n.self;
    r.min = n.min;
    r.max = n.max;
    r.first_tick = n.first_tick == ~uint64_t{0} ? n.first_tick : n.first_tick + offset;
    r.first = n.first;
    calls += i == 0 ? 0 : n.calls;
    std::memcpy(raw.data() + i * sizeof r, &r, sizeof r);
  }
  return w.write_block(BlockType::kProfile, thread, static_cast<uint32_t>(t.nodes.size()), tick, raw, dump);
}

// The program itself, when the recorder did not say: the earliest-started
// first image of a pid that was not forked, followed to the last image of
// that pid (exec). nullptr when there is none.
const ProcessRecord* main_process(const std::vector<RawProcess>& raw, const std::vector<ProcessRecord>& procs) {
  const ProcessRecord* first = nullptr;
  for (size_t i = 0; i < procs.size(); ++i) {
    const RawProcess& p = raw[i];
    if (p.incarnation != 0 || !p.has_start || (p.start.flags & kRawProcessForked)) continue;
    if (!first || procs[i].start_tick < first->start_tick) first = &procs[i];
  }
  const ProcessRecord* last = first;
  for (const ProcessRecord& pr : procs)
    if (first && pr.pid == first->pid && pr.incarnation > last->incarnation) last = &pr;
  return last;
}

}  // namespace

bool tsc_is_invariant() {
  unsigned a, b, c, d;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return (d >> 8) & 1u;
}

ClockPair sample_clocks() {
  // The TSC read between two reads of CLOCK_MONOTONIC, paired with their
  // midpoint; of a few tries, the narrowest bracket (a process's first
  // clock_gettime faults in the vDSO's pages, tens of microseconds, and a
  // preemption can fall between two reads).
  ClockPair best{0, 0};
  uint64_t best_width = ~uint64_t{0};
  for (int i = 0; i < 4; ++i) {
    const uint64_t before = mono_now();
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    const uint64_t after = mono_now();
    if (after - before < best_width) {
      best_width = after - before;
      best = {(uint64_t{hi} << 32) | lo, before + (after - before) / 2};
    }
    if (best_width < 1000) break;
  }
  return best;
}

uint64_t ticks_since(ClockKind clock, uint64_t origin) {
  const ClockPair now = sample_clocks();
  const uint64_t v = clock == ClockKind::kTsc ? now.tsc : now.mono_ns;
  return v > origin ? v - origin : 0;
}

Result<FinalizeSummary> finalize_session(const std::string& raw_dir, const std::string& out_path,
                                         const FinalizeOptions& options, LiveStream* live) {
  CALLSCOPE_TRY(RawSession s, read_raw_session(raw_dir));
  FinalizeSummary sum;
  sum.warnings = s.warnings;
  // A session whose recorder died while streaming: go on from its trace.
  std::unique_ptr<LiveStream> recovered;
  if (!live && s.stream) {
    auto r = LiveStream::recover(s, out_path, options.zstd_level, options.claim);
    if (!r) return r.error();
    recovered = std::move(*r);
    live = recovered.get();
  }
  const Calibration cal = calibrate(s);

  FileHeader fh{};
  std::memcpy(fh.magic, kTraceMagic, sizeof fh.magic);
  fh.version_major = kTraceVersionMajor;
  fh.version_minor = kTraceVersionMinor;
  fh.header_size = sizeof fh;
  fh.clock = static_cast<uint32_t>(cal.clock);
  fh.ticks_per_ns = cal.ticks_per_ns;
  fh.origin_mono_ns = cal.origin_mono_ns;
  fh.origin_realtime_ns = s.recorder ? s.recorder->start_realtime_ns : 0;
  for (const RawProcess& p : s.processes)
    if (!fh.origin_realtime_ns && p.has_start) fh.origin_realtime_ns = p.start.realtime_ns;

  std::unique_ptr<TraceWriter> writer;
  if (live) {
    writer = live->take_writer();
    CALLSCOPE_CHECK(writer->rewrite_header(fh));
  } else {
    CALLSCOPE_TRY(writer, TraceWriter::create(out_path, fh, options.zstd_level, options.claim));
  }
  auto to_trace = [&](const RawProcess& p, uint64_t raw_tick) {
    return raw_tick + (p.has_start ? p.start.base_tick - cal.origin : 0);
  };
  auto mono_to_tick = [&](uint64_t mono) -> uint64_t {
    if (mono < cal.origin_mono_ns) return 0;
    return static_cast<uint64_t>(static_cast<double>(mono - cal.origin_mono_ns) * cal.ticks_per_ns);
  };

  // Processes: exit status from the recorder (it reaped them) wins over the
  // runtime's own exit record; an earlier incarnation of a pid ended by exec.
  std::vector<ProcessRecord> procs;
  StringTable proc_strings;
  std::map<std::pair<uint32_t, uint32_t>, int32_t> index_of;  // (pid, n) -> index
  for (size_t i = 0; i < s.processes.size(); ++i) index_of[{s.processes[i].pid, s.processes[i].incarnation}] = static_cast<int32_t>(i);
  for (size_t i = 0; i < s.processes.size(); ++i) {
    const RawProcess& p = s.processes[i];
    ProcessRecord pr{};
    pr.pid = p.pid;
    pr.ppid = p.has_start ? p.start.ppid : 0;
    pr.incarnation = p.incarnation;
    pr.parent_index = -1;
    if (p.has_start && (p.start.flags & kRawProcessForked)) {
      auto it = index_of.find({pr.ppid, p.start.parent_n});
      if (it != index_of.end()) pr.parent_index = it->second;
    }
    pr.start_tick = to_trace(p, 0);
    // A fork child's raw ticks count from its parent's base (to_trace(p, 0)
    // is the parent's start): it starts at the fork, when its runtime took
    // its calibration pair. (Its inherited frames keep their older ticks.)
    if (p.has_start && (p.start.flags & kRawProcessForked) && p.start.calib_tick >= cal.origin)
      pr.start_tick = std::max(pr.start_tick, p.start.calib_tick - cal.origin);
    pr.exe = proc_strings.add(p.exe);
    pr.cmdline = proc_strings.add(p.cmdline);
    const bool later_incarnation = i + 1 < s.processes.size() && s.processes[i + 1].pid == p.pid;
    if (later_incarnation) {
      fill_exit(pr, ExitHow::kExec, 0, 0, 0);
      pr.end_tick = to_trace(s.processes[i + 1], 0);
    } else {
      if (p.exit) {
        fill_exit(pr, static_cast<ExitHow>(p.exit->how), p.exit->code, p.exit->signal, p.exit->core_dumped);
        pr.end_tick = to_trace(p, p.exit->tick);
      }
      for (const RawChildStatus& cs : s.child_statuses) {
        if (cs.pid != p.pid) continue;
        fill_exit(pr, static_cast<ExitHow>(cs.how), cs.code, cs.signal, cs.core_dumped);
        pr.end_tick = std::max(pr.end_tick, mono_to_tick(cs.mono_ns));
      }
    }
    procs.push_back(pr);
  }

  std::vector<ModuleRecord> mods;
  StringTable mod_strings;
  for (size_t i = 0; i < s.processes.size(); ++i) {
    const RawProcess& p = s.processes[i];
    for (const RawModuleEntry& m : p.modules) {
      if (m.record.flags & kRawModuleUnload) {
        for (ModuleRecord& mr : mods) {
          if (mr.process_index == i && mr.load_bias == m.record.load_bias && mr.low == m.record.low &&
              !(mr.flags & kModuleUnloaded)) {
            mr.flags |= kModuleUnloaded;
            mr.unload_tick = to_trace(p, m.record.tick);
          }
        }
        continue;
      }
      ModuleRecord mr{};
      mr.process_index = static_cast<uint32_t>(i);
      mr.load_bias = m.record.load_bias;
      mr.low = m.record.low;
      mr.high = m.record.high;
      mr.load_tick = to_trace(p, m.record.tick);
      std::memcpy(mr.build_id, m.record.build_id, sizeof mr.build_id);
      mr.build_id_len = std::min<uint32_t>(m.record.build_id_len, sizeof mr.build_id);
      mr.path = mod_strings.add(m.path);
      mods.push_back(mr);
    }
  }

  // Events, thread by thread. Threads that `record` streamed while the
  // program ran keep the index their blocks carry; their rings still hold
  // the last segments.
  std::vector<ThreadRecord> threads(live ? live->thread_count() : 0);
  std::vector<bool> placed(threads.size(), false);
  StringTable thread_strings;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> thread_of;  // (process, tid) -> index (the last)
  std::map<std::pair<uint32_t, std::string>, uint32_t> thread_of_stem;  // (process, "t<tid>[.n]") -> index
  uint64_t last_tick = 0;
  auto place = [&](uint32_t pi, const std::string& path, const RawThreadHeader& h, ThreadRecord r, uint32_t index,
                   uint32_t blocks) {
    r.process_index = pi;
    r.tid = h.tid;
    r.blocks = blocks;
    if (h.flags & kRawThreadMain) r.flags |= kThreadMain;
    if (h.end_tick) r.flags |= kThreadExitedCleanly;
    // Its process unwound at allocations (record --memory --unwind): its
    // calls are frames, and a trace may mix them with hooked processes'.
    if (pi < s.processes.size() && s.processes[pi].mode && (s.processes[pi].mode->flags & kRawModeUnwound)) {
      r.flags |= kThreadUnwound;
      sum.unwound_calls += r.calls;
    }
    r.name = thread_strings.add(std::string(h.name, strnlen(h.name, sizeof(RawThreadHeader::name))));
    sum.events += r.events;
    sum.calls += r.calls;
    sum.lost += r.lost_events;
    sum.torn += r.torn_events;
    sum.wait_ns += h.wait_ns;
    sum.waits += h.waits;
    last_tick = std::max(last_tick, r.end_tick);
    thread_of[{pi, r.tid}] = index;
    thread_of_stem[{pi, stem(path)}] = index;
    if (index >= threads.size()) threads.resize(index + 1);
    threads[index] = r;
  };
  for (size_t pi = 0; pi < s.processes.size(); ++pi) {
    const RawProcess& p = s.processes[pi];
    for (const std::string& path : p.thread_files) {
      if (LiveStream::Thread* lt = live ? live->thread_of(path) : nullptr) {
        auto st = live->finish_thread(*lt, procs[pi].end_tick, p.switches);
        if (!st) return st.error().context("'" + path + "'");
        place(static_cast<uint32_t>(pi), path, lt->header, lt->record, lt->index, lt->events->blocks());
        placed[lt->index] = true;
        continue;
      }
      auto file = RawThreadFile::open(path);
      if (!file) {
        sum.warnings.push_back(file.error().message());
        continue;
      }
      const uint32_t index = static_cast<uint32_t>(threads.size());
      EventEncoder enc(*writer, index);
      ThreadOutcome out;
      auto st = encode_thread(**file, to_trace(p, 0), procs[pi].end_tick, p.switches, enc, out);
      if (!st) return st.error().context("'" + path + "'");
      if (std::string d = (*file)->damage(); !d.empty()) sum.warnings.push_back(d);
      if ((*file)->bad_words())
        sum.warnings.push_back("'" + path + "': " + std::to_string((*file)->bad_words()) + " damaged words skipped");
      place(static_cast<uint32_t>(pi), path, (*file)->header(), out.record, index, enc.blocks());
    }
  }
  for (uint32_t i = 0; i < placed.size(); ++i) {
    if (placed[i]) continue;  // a streamed thread whose process could not be read: keep its events
    LiveStream::Thread* lt = live->thread(i);
    CALLSCOPE_CHECK(live->finish_thread(*lt, 0));
    place(0, lt->path, lt->header, lt->record, i, lt->events->blocks());
  }
  // Threads that ran untraced (no file for their events): a record each,
  // with no events, so that every view can say they were not recorded.
  for (size_t pi = 0; pi < s.processes.size(); ++pi) {
    const RawProcess& p = s.processes[pi];
    for (const RawUntracedThread& u : p.untraced) {
      ThreadRecord r{};
      r.process_index = static_cast<uint32_t>(pi);
      r.tid = u.tid;
      r.start_tick = to_trace(p, u.tick);
      r.end_tick = r.start_tick;
      r.flags = kThreadUntraced | (u.tid == p.pid ? kThreadMain : 0);
      r.untraced_error = u.error;
      r.name = thread_strings.add(std::string(u.name, strnlen(u.name, sizeof u.name)));
      const auto index = static_cast<uint32_t>(threads.size());
      threads.push_back(r);
      thread_of.try_emplace({static_cast<uint32_t>(pi), u.tid}, index);  // a traced thread of that tid comes first
      sum.untraced_threads.push_back({p.pid, u.tid, u.error, std::string(u.name, strnlen(u.name, sizeof u.name))});
    }
  }
  // What the live stream found missing or damaged (also a dead recorder's).
  if (live) sum.warnings.insert(sum.warnings.end(), live->warnings().begin(), live->warnings().end());

  for (ProcessRecord& pr : procs) {
    if (pr.end_tick == 0) {  // unknown end: the last event of its threads
      for (const ThreadRecord& t : threads)
        if (&procs[t.process_index] == &pr) pr.end_tick = std::max(pr.end_tick, t.end_tick);
    }
  }

  // Profile mode: every snapshot the processes wrote, then the final state
  // of every tree (also after a crash: the trees are in shared files).
  std::vector<DumpRecord> dumps;
  bool any_profile = false, any_filtered = false, any_unwound = false;
  uint64_t profile_calls = 0;
  for (size_t pi = 0; pi < s.processes.size(); ++pi) {
    const RawProcess& p = s.processes[pi];
    if (p.mode && (p.mode->flags & kRawModeFiltered)) any_filtered = true;
    if (p.mode && (p.mode->flags & kRawModeUnwound)) {
      any_unwound = true;
      ++sum.unwound_processes;
    }
    if (!p.mode || p.mode->mode != static_cast<uint32_t>(TraceMode::kProfile)) continue;
    any_profile = true;
    const uint64_t offset = to_trace(p, 0);
    // A thread's tree and its events share a file stem (t<tid> or t<tid>.<n>,
    // when a tid was reused); snapshots name a tree by tid and start tick.
    std::vector<std::pair<std::string, RawTree>> finals;
    for (const std::string& path : p.prof_files) {
      auto tree = read_prof_file(path);
      if (!tree) {
        sum.warnings.push_back(tree.error().message());
        continue;
      }
      finals.emplace_back(stem(path), std::move(*tree));
    }
    auto thread_for = [&](const std::string& file_stem, uint32_t tid) -> uint32_t {
      auto it = thread_of_stem.find({static_cast<uint32_t>(pi), file_stem});
      if (it != thread_of_stem.end()) return it->second;
      auto jt = thread_of.find({static_cast<uint32_t>(pi), tid});
      if (file_stem.empty() && jt != thread_of.end()) return jt->second;
      ThreadRecord r{};  // a tree without an event file: give it a thread record
      r.process_index = static_cast<uint32_t>(pi);
      r.tid = tid;
      std::string name;
      for (const auto& [fs, t] : finals) {
        if (fs != file_stem || file_stem.empty()) continue;
        name = std::string(t.name, strnlen(t.name, sizeof t.name));
        r.start_tick = t.start_tick + offset;
        r.end_tick = std::max(r.start_tick, (t.end_tick ? t.end_tick + offset : procs[pi].end_tick));
        if (t.flags & kRawThreadMain) r.flags |= kThreadMain;
        if (t.end_tick) r.flags |= kThreadExitedCleanly;
      }
      r.name = thread_strings.add(name);
      threads.push_back(r);
      const uint32_t index = static_cast<uint32_t>(threads.size() - 1);
      if (!file_stem.empty()) thread_of_stem[{static_cast<uint32_t>(pi), file_stem}] = index;
      thread_of.try_emplace({static_cast<uint32_t>(pi), tid}, index);  // for marks
      return index;
    };
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> tree_of;  // (tid, start tick) -> thread index
    for (auto& [file_stem, t] : finals) tree_of[{t.tid, t.start_tick}] = thread_for(file_stem, t.tid);
    auto index_of_tree = [&](const RawTree& t) -> uint32_t {
      auto it = tree_of.find({t.tid, t.start_tick});
      return it != tree_of.end() ? it->second : thread_for("", t.tid);
    };
    if (!p.dumps_file.empty()) {
      auto st = read_dumps(p.dumps_file, sum.warnings, [&](RawSnapshot& snap) -> Status {
        DumpRecord d{};
        d.process_index = static_cast<uint32_t>(pi);
        d.seq = snap.header.seq;
        d.reason = snap.header.reason;
        d.threads = static_cast<uint32_t>(snap.threads.size());
        d.tick = snap.header.tick + offset;
        uint64_t ignored = 0;
        for (const RawTree& t : snap.threads)
          CALLSCOPE_CHECK(write_tree(*writer, t, index_of_tree(t), static_cast<uint32_t>(dumps.size()), d.tick,
                                     offset, ignored));
        dumps.push_back(d);
        return ok_status();
      });
      if (!st) return st.error().context("'" + p.dumps_file + "'");
    }
    DumpRecord d{};
    d.process_index = static_cast<uint32_t>(pi);
    d.seq = 0;     // numbered below, after every snapshot of the session
    d.reason = 4;  // the end: exit, or death (the process record says how)
    d.tick = procs[pi].end_tick;
    for (auto& [file_stem, t] : finals) {
      // A clear the thread never applied (it made no call since): its counts
      // are from before it, and its open calls count from the clear on.
      uint64_t floor = 0;
      if (!p.clears.empty() && t.clear_seq < p.clears.back().seq) {
        for (RawProfNode& n : t.nodes) reset_node_stats(n);
        t.dropped_calls = 0;
        floor = p.clears.back().tick;
      }
      uint64_t end = t.end_tick ? t.end_tick : (procs[pi].end_tick > offset ? procs[pi].end_tick - offset : 0);
      if (!t.end_tick && !t.open.empty()) end = end_of_open_calls(t, p.switches, end);
      d.tick = std::max(d.tick, end + offset);
      if (!t.open.empty()) add_open_time(t.nodes.data(), t.nodes.size(), t.open.data(),
                                         static_cast<uint32_t>(t.open.size()), end, floor);
      const uint32_t ti = thread_for(file_stem, t.tid);
      uint64_t calls = 0;
      CALLSCOPE_CHECK(write_tree(*writer, t, ti, static_cast<uint32_t>(dumps.size()), d.tick, offset, calls));
      threads[ti].calls = std::max(threads[ti].calls, calls);  // chrono events may have counted some already
      profile_calls += calls;
      ++d.threads;
    }
    dumps.push_back(d);
  }
  // The snapshots keep the session's numbers (the runtime counts them for
  // all its processes together: what `ctl dump` answered); each process's
  // final state comes after them all, in process order.
  uint32_t last_seq = 0;
  for (const DumpRecord& d : dumps) last_seq = std::max(last_seq, d.seq);
  for (DumpRecord& d : dumps)
    if (d.reason == 4) d.seq = ++last_seq;
  if (any_profile) sum.calls = profile_calls;
  sum.profile = any_profile;
  sum.unwound = any_unwound;
  sum.snapshots = static_cast<uint32_t>(dumps.size());
  for (const ProcessRecord& pr : procs) last_tick = std::max(last_tick, pr.end_tick);

  // Names given while threads ran: each thread's last, and their history.
  std::vector<Rename> renames;
  for (size_t pi = 0; pi < s.processes.size(); ++pi)
    for (const RawThreadName& n : s.processes[pi].thread_names)
      renames.push_back({static_cast<uint32_t>(pi), n.tid, to_trace(s.processes[pi], n.tick),
                         std::string(n.name, strnlen(n.name, sizeof n.name)),
                         std::string(n.old_name, strnlen(n.old_name, sizeof n.old_name))});
  std::vector<ThreadNameRecord> name_records;
  StringTable name_strings;
  if (!renames.empty()) {
    std::vector<std::string> names;
    for (const ThreadRecord& t : threads)
      names.emplace_back(reinterpret_cast<const char*>(thread_strings.bytes().data()) + t.name.offset, t.name.length);
    const std::vector<std::string> header_names = names;
    for (const NameChange& c : resolve_thread_names(threads, names, std::move(renames)))
      name_records.push_back({c.tick, c.thread_index, 0, name_strings.add(c.name)});
    for (size_t i = 0; i < threads.size(); ++i)
      if (names[i] != header_names[i]) threads[i].name = thread_strings.add(names[i]);
  }

  std::vector<MarkRecord> marks;
  StringTable mark_strings;
  for (size_t pi = 0; pi < s.processes.size(); ++pi) {
    for (const RawProcess::Mark& m : s.processes[pi].marks) {
      MarkRecord r{};
      r.tick = to_trace(s.processes[pi], m.record.tick);
      auto it = thread_of.find({static_cast<uint32_t>(pi), m.record.tid});
      r.thread_index = it == thread_of.end() ? ~0u : it->second;
      r.process_index = static_cast<uint32_t>(pi);
      r.id = m.record.id;
      r.kind = m.record.kind;
      r.text = mark_strings.add(m.text);
      marks.push_back(r);
    }
  }
  std::sort(marks.begin(), marks.end(), [](const MarkRecord& a, const MarkRecord& b) { return a.tick < b.tick; });

  // Resident-set samples (record --memory): the recorder's and the runtime's.
  std::vector<ResidentRecord> resident;
  StringTable resident_strings;
  for (size_t pi = 0; pi < s.processes.size(); ++pi) {
    for (const ResidentSample& sample : read_process_samples(s.processes[pi].dir)) {
      for (const ResidentEntry& e : sample.entries) {
        ResidentRecord r{};
        r.tick = mono_to_tick(sample.mono_ns);
        r.process_index = static_cast<uint32_t>(pi);
        r.kind = static_cast<uint8_t>(e.kind);
        r.reason = static_cast<uint8_t>(sample.reason);
        r.rss_kb = e.rss_kb;
        r.pss_kb = e.pss_kb;
        r.path = resident_strings.add(e.path);
        resident.push_back(r);
      }
    }
  }

  InfoRecord info{};
  StringTable info_strings;
  info.start_realtime_ns = fh.origin_realtime_ns;
  info.duration_ticks = last_tick;
  bool main_reaped = false;
  for (const RawChildStatus& cs : s.child_statuses) {
    if (!cs.is_main) continue;
    main_reaped = true;
    info.main_pid = cs.pid;
    info.main_how = cs.how;
    info.main_code = cs.code;
    info.main_signal = cs.signal;
    info.main_core_dumped = cs.core_dumped;
    info.duration_ticks = std::max(info.duration_ticks, mono_to_tick(cs.mono_ns));
  }
  // No recorder, or one that died before the program ended (`finish` of a
  // killed `record`): the program is the first process started that was not
  // forked, and it ended as the last image of its pid says.
  if (!main_reaped) {
    if (const ProcessRecord* main = main_process(s.processes, procs)) {
      info.main_pid = main->pid;
      info.main_how = main->how;
      info.main_code = main->code;
      info.main_signal = main->signal;
      info.main_core_dumped = main->core_dumped;
    }
  }
  // No call, because no thread could be traced, is not a program without hooks.
  if (sum.calls == 0 && !any_profile && sum.untraced_threads.empty()) info.flags |= kInfoNotInstrumented;
  if (any_profile) info.flags |= kInfoProfile;
  if (any_filtered) info.flags |= kInfoFiltered;
  if (any_unwound) info.flags |= kInfoUnwound;
  for (const RawProcess& p : s.processes)
    if (p.has_start && (p.start.flags & kRawProcessAttached)) info.flags |= kInfoAttached;
  info.flags |= options.info_flags;
  std::string cmdline = s.recorder_cmdline;
  if (cmdline.empty() && !s.processes.empty()) cmdline = s.processes.front().cmdline;
  info.cmdline = info_strings.add(cmdline);
  info.cwd = info_strings.add(s.recorder_cwd);
  info.tool_version = info_strings.add("callscope " CALLSCOPE_VERSION_STRING);
  if (!options.block_devices.empty()) info.block_devices = info_strings.add(options.block_devices);

  // Metadata before and after the events: the reader indexes all blocks first.
  CALLSCOPE_CHECK(writer->write_records(BlockType::kInfo, std::vector<InfoRecord>{info}, info_strings));
  CALLSCOPE_CHECK(writer->write_records(BlockType::kProcesses, procs, proc_strings));
  CALLSCOPE_CHECK(writer->write_records(BlockType::kModules, mods, mod_strings));
  CALLSCOPE_CHECK(writer->write_records(BlockType::kThreads, threads, thread_strings));
  if (!name_records.empty())
    CALLSCOPE_CHECK(writer->write_records(BlockType::kThreadNames, name_records, name_strings));
  if (!dumps.empty()) CALLSCOPE_CHECK(writer->write_records(BlockType::kDumps, dumps, StringTable()));
  if (!marks.empty()) CALLSCOPE_CHECK(writer->write_records(BlockType::kMarks, marks, mark_strings));
  if (!resident.empty())
    CALLSCOPE_CHECK(writer->write_records(BlockType::kResident, resident, resident_strings));
  EndRecord end{sum.events, writer->blocks_written() + 1};
  CALLSCOPE_CHECK(writer->finish(end));
  // The dead recorder's unfinished trace is in this one now.
  if (recovered && !options.keep_inputs) ::unlink(s.stream_path.c_str());
  sum.processes = static_cast<uint32_t>(procs.size());
  sum.threads = static_cast<uint32_t>(threads.size());
  sum.file_bytes = writer->bytes_written();
  return sum;
}

}  // namespace callscope::format
