// Helpers shared by the format tests: temp directories, a reference model of
// what TraceReader returns for the events given to EventEncoder, and a small
// multi-thread trace written with TraceWriter.
#pragma once

// CALLSCOPE_HAVE_ASAN: built with AddressSanitizer (gcc or clang).
#if defined(__SANITIZE_ADDRESS__)
#define CALLSCOPE_HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CALLSCOPE_HAVE_ASAN 1
#endif
#endif

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "format/raw_session.h"
#include "format/trace_format.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/varint.h"

#include <gtest/gtest.h>
#include <zstd.h>

namespace callscope::format {

inline bool operator==(const TraceEvent& a, const TraceEvent& b) {
  return a.kind == b.kind && a.depth == b.depth && a.tick == b.tick && a.addr == b.addr && a.sp == b.sp &&
         a.arg == b.arg;
}
inline std::ostream& operator<<(std::ostream& os, const TraceEvent& e) {
  return os << "{kind " << int(e.kind) << " depth " << e.depth << " tick " << e.tick << " addr 0x" << std::hex
            << e.addr << " sp 0x" << e.sp << std::dec << " arg " << e.arg << "}";
}

namespace test {

// A process start record of a hand-built raw session: CLOCK_MONOTONIC ticks
// with base tick `base` (calibrated 1:1 at the base).
inline RawProcessStart start(uint32_t pid, uint32_t ppid, uint64_t base, uint32_t parent_n, uint32_t flags,
                             const std::string& exe, const std::string& cmdline) {
  RawProcessStart ps{};
  ps.pid = pid;
  ps.ppid = ppid;
  ps.clock = static_cast<uint32_t>(ClockKind::kMonotonic);
  ps.parent_n = parent_n;
  ps.base_tick = base;
  ps.calib_tick = base;
  ps.calib_mono_ns = base;
  ps.realtime_ns = 1700000000000000000ull + base;
  ps.exe_len = static_cast<uint32_t>(exe.size());
  ps.cmdline_len = static_cast<uint32_t>(cmdline.size());
  ps.flags = flags;
  return ps;
}

// A directory made with mkdtemp, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "callscope-fmt-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A process directory of a hand-built raw session, as the runtime makes
// it: `dir`/`name` ("1.0") and its meta file (the file header, then the
// process start of pid 1).
inline void make_process_dir(const TempDir& dir, const std::string& name) {
  ASSERT_EQ(::mkdir(dir.file(name).c_str(), 0700), 0);
  const int fd = ::open(dir.file(name + "/meta").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  RawFileHeader fh{};
  std::memcpy(fh.magic, kRawMetaMagic, sizeof fh.magic);
  fh.version = kRawVersion;
  append_meta_record(fd, RawMetaType::kFileHeader, &fh, sizeof fh);
  const RawProcessStart ps = start(1, 0, 0, ~0u, 0, "", "");
  append_meta_record(fd, RawMetaType::kProcessStart, &ps, sizeof ps);
  ::close(fd);
}

// What the caller gives EventEncoder::add.
struct InEvent {
  EventKind kind;
  uint64_t tick;
  uint64_t addr;  // entries and stray exits
  uint64_t sp;    // entries
  uint64_t arg;   // kLost, kMark; kAlloc: size
  uint8_t op = 0;  // kAlloc, kFree (addr: the block)
};

// The reader's view of an event stream, computed independently of the reader:
// exits name the frame they close, depth counts open frames.
inline std::vector<TraceEvent> expected_events(const std::vector<InEvent>& in) {
  struct Frame {
    uint64_t addr, sp;
  };
  std::vector<Frame> stack;
  std::vector<TraceEvent> out;
  for (const InEvent& i : in) {
    TraceEvent e{};
    e.kind = i.kind;
    e.tick = i.tick;
    switch (i.kind) {
      case EventKind::kEntry:
      case EventKind::kEntryInherited:
        stack.push_back({i.addr, i.sp});
        e.addr = i.addr;
        e.sp = i.sp;
        e.depth = static_cast<uint32_t>(stack.size());
        break;
      case EventKind::kExit:
      case EventKind::kExitUnwound:
      case EventKind::kExitTruncated:
        e.addr = stack.back().addr;
        e.sp = stack.back().sp;
        e.depth = static_cast<uint32_t>(stack.size());
        stack.pop_back();
        break;
      case EventKind::kExitStray:
        e.addr = i.addr;
        e.depth = static_cast<uint32_t>(stack.size());
        break;
      case EventKind::kPause:
      case EventKind::kResume:
        e.depth = static_cast<uint32_t>(stack.size());
        break;
      case EventKind::kLost:
      case EventKind::kMark:
      case EventKind::kTag:
      case EventKind::kWait:
        e.arg = i.arg;
        e.depth = static_cast<uint32_t>(stack.size());
        break;
      case EventKind::kAlloc:
      case EventKind::kFree:
        e.addr = i.addr;
        e.arg = i.arg;
        e.op = i.op;
        e.depth = static_cast<uint32_t>(stack.size());
        break;
    }
    out.push_back(e);
  }
  return out;
}

inline std::vector<TraceEvent> read_events(TraceReader& r, uint32_t thread, std::string* error = nullptr) {
  std::vector<TraceEvent> out;
  auto st = r.for_each_event(thread, [&](const TraceEvent& e) {
    out.push_back(e);
    return true;
  });
  if (!st && error) *error = st.error().message();
  return out;
}

// The events of `thread` as TraceReader::for_each_call_event_into gives
// them (several batches when there are more than kEventBatch), as
// TraceEvents holding what it decodes: kind, tick, and the value of the
// kinds that carries_value() (entries' addr, losses' and waits' arg).
inline std::vector<TraceEvent> read_call_events(TraceReader& r, uint32_t thread) {
  struct Sink final : TraceReader::CallSink {
    std::vector<EventKind> kinds = std::vector<EventKind>(TraceReader::kEventBatch);
    std::vector<uint64_t> ticks = std::vector<uint64_t>(TraceReader::kEventBatch);
    std::vector<uint64_t> values = std::vector<uint64_t>(TraceReader::kEventBatch);
    std::vector<TraceEvent> out;
    TraceReader::CallColumns buffer() override { return {kinds.data(), ticks.data(), values.data()}; }
    bool commit(size_t n, size_t n_values) override {
      size_t v = 0;
      for (size_t i = 0; i < n; ++i) {
        TraceEvent e{};
        e.kind = kinds[i];
        e.tick = ticks[i];
        if (carries_value(e.kind)) (is_entry(e.kind) ? e.addr : e.arg) = values[v++];
        out.push_back(e);
      }
      EXPECT_EQ(v, n_values);
      return true;
    }
  } sink;
  EXPECT_TRUE(r.for_each_call_event_into(thread, sink).ok());
  return sink.out;
}

// What read_call_events should give for events `full` (from read_events).
inline std::vector<TraceEvent> call_events_of(const std::vector<TraceEvent>& full) {
  std::vector<TraceEvent> out;
  for (const TraceEvent& f : full) {
    if (is_memory(f.kind) || f.kind == EventKind::kTag) continue;  // the call columns leave them out
    TraceEvent e{};
    e.kind = f.kind;
    e.tick = f.tick;
    if (is_entry(f.kind)) e.addr = f.addr;
    if (f.kind == EventKind::kLost || f.kind == EventKind::kWait) e.arg = f.arg;
    out.push_back(e);
  }
  return out;
}

inline FileHeader make_file_header() {
  FileHeader fh{};
  std::memcpy(fh.magic, kTraceMagic, sizeof fh.magic);
  fh.version_major = kTraceVersionMajor;
  fh.version_minor = kTraceVersionMinor;
  fh.header_size = sizeof fh;
  fh.clock = static_cast<uint32_t>(ClockKind::kMonotonic);
  fh.ticks_per_ns = 1.0;
  fh.origin_mono_ns = 1000;
  fh.origin_realtime_ns = 1700000000000000000ull;
  return fh;
}

// Ends a trace of one thread, named "t", whose stream is written: its
// Threads block and the End record.
inline void finish_one_thread_trace(TraceWriter& w, ThreadRecord r) {
  StringTable names;
  r.name = names.add("t");
  EXPECT_TRUE(w.write_records(BlockType::kThreads, std::vector<ThreadRecord>{r}, names).ok());
  EXPECT_TRUE(w.finish(EndRecord{r.events, w.blocks_written() + 1}).ok());
}

// One event into an encoder: memory events have their own call.
inline Status add_event(EventEncoder& enc, const InEvent& e) {
  if (is_memory(e.kind)) return enc.memory(e.kind, e.tick, e.addr, e.arg, e.op);
  return enc.add(e.kind, e.tick, e.addr, e.sp, e.arg);
}

// A small trace: `threads.size()` threads of one process, one event block
// each (in thread order), then Info, Processes, Modules, Threads, End.
// `minor`: the version the header says (an older one: how its readers read it).
inline bool write_small_trace(const std::string& path, const std::vector<std::vector<InEvent>>& threads,
                              int zstd_level = 3, uint16_t minor = kTraceVersionMinor) {
  FileHeader fh = make_file_header();
  fh.version_minor = minor;
  auto w = TraceWriter::create(path, fh, zstd_level);
  if (!w) return false;
  TraceWriter& writer = **w;
  uint64_t total = 0;
  std::vector<ThreadRecord> trs;
  StringTable tstr;
  for (uint32_t t = 0; t < threads.size(); ++t) {
    EventEncoder enc(writer, t);
    for (const InEvent& e : threads[t])
      if (!add_event(enc, e)) return false;
    if (!enc.flush()) return false;
    ThreadRecord r{};
    r.tid = 4000 + t;
    r.events = enc.events();
    r.blocks = enc.blocks();
    r.flags = t == 0 ? kThreadMain : 0;
    r.name = tstr.add("worker-" + std::to_string(t));
    trs.push_back(r);
    total += enc.events();
  }
  InfoRecord info{};
  StringTable istr;
  info.main_pid = 4000;
  info.cmdline = istr.add(std::string("./prog\0arg", 10));
  info.cwd = istr.add("/tmp");
  info.tool_version = istr.add("callscope test");
  if (!writer.write_records(BlockType::kInfo, std::vector<InfoRecord>{info}, istr)) return false;
  ProcessRecord pr{};
  StringTable pstr;
  pr.pid = 4000;
  pr.parent_index = -1;
  pr.exe = pstr.add("/usr/bin/prog");
  pr.cmdline = pstr.add(std::string("./prog\0arg", 10));
  if (!writer.write_records(BlockType::kProcesses, std::vector<ProcessRecord>{pr}, pstr)) return false;
  ModuleRecord mr{};
  StringTable mstr;
  mr.low = 0x400000;
  mr.high = 0x500000;
  mr.path = mstr.add("/usr/bin/prog");
  if (!writer.write_records(BlockType::kModules, std::vector<ModuleRecord>{mr}, mstr)) return false;
  if (!writer.write_records(BlockType::kThreads, trs, tstr)) return false;
  return writer.finish(EndRecord{total, writer.blocks_written() + 1}).ok();
}

// A balanced, varied stream of `n` (about) events for thread `t`.
inline std::vector<InEvent> sample_stream(uint32_t t, size_t n) {
  std::vector<InEvent> ev;
  uint64_t tick = 100 + t * 7;
  const uint64_t sp0 = 0x7ffd00000000ull - t * 0x100000;
  std::vector<uint64_t> sps;
  for (size_t i = 0; ev.size() < n; ++i) {
    tick += 1 + (i * 13 + t) % 50;
    const unsigned r = static_cast<unsigned>((i * 2654435761u + t) >> 7) % 10;
    if (r < 5 || sps.empty()) {
      const uint64_t sp = (sps.empty() ? sp0 : sps.back()) - 16 * (1 + r);
      sps.push_back(sp);
      ev.push_back({sps.size() == 1 && i == 0 ? EventKind::kEntryInherited : EventKind::kEntry, tick,
                    0x401000 + 0x40 * ((i + t) % 37), sp, 0});
    } else if (r < 9) {
      sps.pop_back();
      ev.push_back({r == 8 ? EventKind::kExitUnwound : EventKind::kExit, tick, 0, 0, 0});
    } else {
      ev.push_back({EventKind::kMark, tick, 0, 0, i});
    }
  }
  while (!sps.empty()) {
    sps.pop_back();
    ev.push_back({EventKind::kExitTruncated, tick, 0, 0, 0});
  }
  return ev;
}

// ---- byte-level trace building (uncompressed blocks, any content) ----------

inline void append_block(std::vector<uint8_t>& file, BlockType type, uint32_t aux0, uint32_t count,
                         uint64_t first_tick, const std::vector<uint8_t>& payload, uint16_t flags = 0,
                         uint32_t raw_size = 0, uint32_t aux1 = 0) {
  BlockHeader h{};
  h.magic = kBlockMagic;
  h.type = static_cast<uint16_t>(type);
  h.flags = flags;
  h.stored_size = static_cast<uint32_t>(payload.size());
  h.raw_size = raw_size ? raw_size : static_cast<uint32_t>(payload.size());
  h.aux0 = aux0;
  h.count = count;
  h.first_tick = first_tick;
  h.aux1 = aux1;
  h.check = header_check(&h, offsetof(BlockHeader, check));
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  file.insert(file.end(), p, p + sizeof h);
  file.insert(file.end(), payload.begin(), payload.end());
}

inline std::vector<uint8_t> file_header_bytes() {
  FileHeader fh = make_file_header();
  seal_file_header(fh);  // as TraceWriter writes it
  const auto* p = reinterpret_cast<const uint8_t*>(&fh);
  return std::vector<uint8_t>(p, p + sizeof fh);
}

// Event columns, filled by hand (nothing checked: any content can be built).
struct Columns {
  EventColumnsHeader h{};  // n_events and the byte counts are set by payload() unless forced
  std::vector<uint8_t> table, kinds, dt, fn, sp, arg;
  bool keep_header = false;
  std::vector<uint8_t> payload() const {
    EventColumnsHeader hh = h;
    if (!keep_header) {
      hh.n_events = static_cast<uint32_t>(kinds.size());
      hh.fn_table_bytes = static_cast<uint32_t>(table.size());
      hh.kinds_bytes = static_cast<uint32_t>(kinds.size());
      hh.dt_bytes = static_cast<uint32_t>(dt.size());
      hh.fn_bytes = static_cast<uint32_t>(fn.size());
      hh.sp_bytes = static_cast<uint32_t>(sp.size());
      hh.arg_bytes = static_cast<uint32_t>(arg.size());
    }
    std::vector<uint8_t> out(sizeof hh);
    std::memcpy(out.data(), &hh, sizeof hh);
    for (const auto* c : {&table, &kinds, &dt, &fn, &sp, &arg}) out.insert(out.end(), c->begin(), c->end());
    return out;
  }
};

// Rewrites every block of a trace uncompressed (flags 0), fixing the header
// checks: payload bytes then reach the column decoder unfiltered by zstd.
inline std::vector<uint8_t> uncompress_trace(const std::vector<uint8_t>& in) {
  FileHeader fh;
  std::memcpy(&fh, in.data(), sizeof fh);
  std::vector<uint8_t> out(in.begin(), in.begin() + fh.header_size);
  size_t off = fh.header_size;
  while (off + sizeof(BlockHeader) <= in.size()) {
    BlockHeader h;
    std::memcpy(&h, in.data() + off, sizeof h);
    std::vector<uint8_t> raw(h.raw_size);
    const size_t n = ZSTD_decompress(raw.data(), raw.size(), in.data() + off + sizeof h, h.stored_size);
    if (ZSTD_isError(n) || n != raw.size()) std::abort();
    append_block(out, static_cast<BlockType>(h.type), h.aux0, h.count, h.first_tick, raw);
    off += sizeof h + h.stored_size;
  }
  return out;
}

inline std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void write_all(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace test
}  // namespace callscope::format
