#include "format/raw_session.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <tuple>

#include "common/files.h"

namespace callscope::format {
namespace {

template <class T>
bool take(const std::vector<uint8_t>& buf, size_t off, size_t end, T& out) {
  if (off + sizeof(T) > end || end > buf.size()) return false;
  std::memcpy(&out, buf.data() + off, sizeof(T));
  return true;
}

std::string take_str(const std::vector<uint8_t>& buf, size_t off, size_t len, size_t end) {
  if (off + len > end) len = off < end ? end - off : 0;
  return std::string(reinterpret_cast<const char*>(buf.data()) + off, len);
}

// Parses the records of a meta file; `on_record(type, body_off, end)`.
template <class F>
Status parse_meta(const std::string& path, std::vector<std::string>& warnings, F on_record) {
  CALLSCOPE_TRY(auto buf, read_file_bytes(path));
  size_t off = 0;
  bool first = true;
  while (off + sizeof(RawMetaHeader) <= buf.size()) {
    RawMetaHeader h;
    std::memcpy(&h, buf.data() + off, sizeof h);
    if (h.size < sizeof h || h.size % 8 != 0 || off + h.size > buf.size()) {
      warnings.push_back(path + ": damaged record at offset " + std::to_string(off) +
                         "; the rest of the file is ignored");
      break;
    }
    if (first) {
      RawFileHeader fh;
      if (h.type != static_cast<uint32_t>(RawMetaType::kFileHeader) ||
          !take(buf, off + sizeof h, off + h.size, fh) ||
          std::memcmp(fh.magic, kRawMetaMagic, sizeof fh.magic) != 0)
        return Error("'" + path + "' is not a callscope metadata file");
      if (fh.version != kRawVersion)
        return Error("'" + path + "' has raw format version " + std::to_string(fh.version) +
                     ", this callscope reads version " + std::to_string(kRawVersion));
      first = false;
    } else {
      on_record(static_cast<RawMetaType>(h.type), off + sizeof h, off + h.size, buf);
    }
    off += h.size;
  }
  if (first) return Error("'" + path + "' is empty or not a callscope metadata file");
  return ok_status();
}

Status read_process(RawProcess& p, std::vector<std::string>& warnings) {
  std::string meta = p.dir + "/meta";
  auto st = parse_meta(meta, warnings, [&](RawMetaType type, size_t body, size_t end,
                                            const std::vector<uint8_t>& buf) {
    switch (type) {
      case RawMetaType::kProcessStart:
        if (take(buf, body, end, p.start)) {
          p.has_start = true;
          size_t s = body + sizeof(RawProcessStart);
          p.exe = take_str(buf, s, p.start.exe_len, end);
          p.cmdline = take_str(buf, s + p.start.exe_len, p.start.cmdline_len, end);
        }
        break;
      case RawMetaType::kModule: {
        RawModuleEntry m;
        if (take(buf, body, end, m.record)) {
          m.path = take_str(buf, body + sizeof(RawModule), m.record.path_len, end);
          p.modules.push_back(std::move(m));
        }
        break;
      }
      case RawMetaType::kProcessExit: {
        RawProcessExit e;
        if (take(buf, body, end, e)) p.exit = e;
        break;
      }
      case RawMetaType::kCalibration: {
        RawCalibration c;
        if (take(buf, body, end, c)) p.calibrations.push_back(c);
        break;
      }
      case RawMetaType::kClear: {
        RawClear c;
        if (take(buf, body, end, c)) p.clears.push_back(c);
        break;
      }
      case RawMetaType::kSwitch: {
        RawSwitch w;
        if (take(buf, body, end, w)) p.switches.push_back(w);
        break;
      }
      case RawMetaType::kThreadName: {
        RawThreadName n;
        if (take(buf, body, end, n)) p.thread_names.push_back(n);
        break;
      }
      case RawMetaType::kUntracedThread: {
        RawUntracedThread u;
        if (take(buf, body, end, u)) p.untraced.push_back(u);
        break;
      }
      case RawMetaType::kMode: {
        RawMode m;
        if (take(buf, body, end, m)) p.mode = m;
        break;
      }
      case RawMetaType::kMark: {
        RawProcess::Mark m;
        if (take(buf, body, end, m.record)) {
          m.text = take_str(buf, body + sizeof(RawMark), m.record.text_len, end);
          p.marks.push_back(std::move(m));
        }
        break;
      }
      default:
        break;  // unknown record types of later minor versions are skipped
    }
  });
  if (!st) return st.error();
  DIR* d = ::opendir(p.dir.c_str());
  if (!d) return system_error("cannot list '" + p.dir + "'", errno);
  while (dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name.size() > 4 && name[0] == 't' && name.compare(name.size() - 3, 3, ".ev") == 0)
      p.thread_files.push_back(p.dir + "/" + name);
    if (name.size() > 6 && name[0] == 't' && name.compare(name.size() - 5, 5, ".prof") == 0)
      p.prof_files.push_back(p.dir + "/" + name);
    if (name == "dumps") p.dumps_file = p.dir + "/" + name;
  }
  ::closedir(d);
  sort_thread_files(p.thread_files);
  sort_thread_files(p.prof_files);
  return ok_status();
}

}  // namespace

namespace {
// (tid, reuse count, name) of a thread file's base name; names not of that
// shape sort after, by text.
std::tuple<bool, unsigned long long, unsigned long long, std::string> thread_file_key(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  unsigned long long tid = 0, n = 0;
  size_t i = 1;
  if (name.size() < 2 || name[0] != 't' || !std::isdigit(static_cast<unsigned char>(name[1])))
    return {true, 0, 0, name};
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) tid = tid * 10 + (name[i++] - '0');
  if (i + 1 < name.size() && name[i] == '.' && std::isdigit(static_cast<unsigned char>(name[i + 1]))) {
    ++i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) n = n * 10 + (name[i++] - '0');
  }
  return {false, tid, n, name};
}
}  // namespace

bool thread_file_before(const std::string& a, const std::string& b) {
  return thread_file_key(a) < thread_file_key(b);
}

void sort_thread_files(std::vector<std::string>& files) {
  std::sort(files.begin(), files.end(), thread_file_before);
}

namespace {

// "<pid>.<n>": a process directory's name.
bool is_process_dir_name(std::string_view name) {
  const size_t dot = name.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return dot != std::string_view::npos && digits(name.substr(0, dot)) && digits(name.substr(dot + 1));
}

// A file the runtime makes in a process directory.
bool is_process_file_name(std::string_view name) {
  if (name == "meta" || name == "dumps") return true;
  if (name.size() < 2 || name[0] != 't' || name[1] < '0' || name[1] > '9') return false;
  for (std::string_view suffix : {".ev", ".spill", ".prof"})
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return name.substr(1, name.size() - 1 - suffix.size()).find_first_not_of("0123456789.") ==
             std::string_view::npos;
  return false;
}

}  // namespace

std::optional<std::string> session_of_path(const std::string& path) {
  static constexpr std::string_view kDeleted = " (deleted)";
  std::string_view p = path;
  if (p.empty() || p[0] != '/' ||
      (p.size() > kDeleted.size() && p.substr(p.size() - kDeleted.size()) == kDeleted))
    return std::nullopt;
  auto last = [](std::string_view s) { return s.substr(s.rfind('/') + 1); };
  auto parent = [](std::string_view s) { return s.substr(0, s.rfind('/')); };
  if (is_process_file_name(last(p))) p = parent(p);
  if (!is_process_dir_name(last(p))) return std::nullopt;
  p = parent(p);
  if (p.empty()) return std::nullopt;  // "/<pid>.<n>": no session directory above it
  return std::string(p);
}

Result<RawSession> read_raw_session(const std::string& dir) {
  RawSession s;
  s.dir = dir;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return system_error("cannot open session directory '" + dir + "'", errno);
  std::vector<std::string> names;
  while (dirent* de = ::readdir(d)) names.emplace_back(de->d_name);
  ::closedir(d);

  for (const std::string& name : names) {
    unsigned pid = 0, n = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "%u.%u%c", &pid, &n, &tail) != 2) continue;
    RawProcess p;
    p.dir = dir + "/" + name;
    p.pid = pid;
    p.incarnation = n;
    auto st = read_process(p, s.warnings);
    if (!st) {
      s.warnings.push_back(st.error().message());
      continue;
    }
    s.processes.push_back(std::move(p));
  }
  std::sort(s.processes.begin(), s.processes.end(), [](const RawProcess& a, const RawProcess& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.incarnation < b.incarnation;
  });

  std::string rec = dir + "/recorder.meta";
  struct stat st {};
  if (::stat(rec.c_str(), &st) == 0) {
    auto r = parse_meta(rec, s.warnings, [&](RawMetaType type, size_t body, size_t end,
                                              const std::vector<uint8_t>& buf) {
      switch (type) {
        case RawMetaType::kRecorderInfo: {
          RawRecorderInfo ri;
          if (take(buf, body, end, ri)) {
            s.recorder = ri;
            size_t o = body + sizeof ri;
            s.recorder_cwd = take_str(buf, o, ri.cwd_len, end);
            s.recorder_cmdline = take_str(buf, o + ri.cwd_len, ri.cmdline_len, end);
          }
          break;
        }
        case RawMetaType::kCalibration: {
          RawCalibration c;
          if (take(buf, body, end, c)) s.calibrations.push_back(c);
          break;
        }
        case RawMetaType::kChildStatus: {
          RawChildStatus c;
          if (take(buf, body, end, c)) s.child_statuses.push_back(c);
          break;
        }
        case RawMetaType::kStream: {
          RawStream rs;
          if (take(buf, body, end, rs)) {
            s.stream = rs;
            s.stream_path = take_str(buf, body + sizeof rs, rs.path_len, end);
          }
          break;
        }
        case RawMetaType::kStreamThread: {
          RawStreamThread rt;
          if (take(buf, body, end, rt))
            s.stream_threads.emplace_back(rt.index, take_str(buf, body + sizeof rt, rt.path_len, end));
          break;
        }
        default:
          break;
      }
    });
    if (!r) s.warnings.push_back(r.error().message());
  }
  if (s.processes.empty() && !s.recorder)
    return Error("'" + dir + "' holds no callscope session (no <pid>.<n>/meta, no recorder.meta)");
  return s;
}

void append_meta_record(int fd, RawMetaType type, const void* body, size_t size, const std::string& extra) {
  if (fd < 0) return;
  const size_t raw = sizeof(RawMetaHeader) + size + extra.size();
  const size_t padded = (raw + 7) & ~size_t{7};
  std::vector<uint8_t> buf(padded, 0);
  RawMetaHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>(padded)};
  std::memcpy(buf.data(), &h, sizeof h);
  std::memcpy(buf.data() + sizeof h, body, size);
  std::memcpy(buf.data() + sizeof h + size, extra.data(), extra.size());
  ssize_t ignored = ::write(fd, buf.data(), buf.size());
  (void)ignored;
}

Result<RawProcessStart> read_process_start(const std::string& process_dir) {
  std::vector<std::string> warnings;
  std::optional<RawProcessStart> start;
  CALLSCOPE_CHECK(parse_meta(process_dir + "/meta", warnings,
                             [&](RawMetaType type, size_t body, size_t end, const std::vector<uint8_t>& buf) {
                               RawProcessStart ps;
                               if (type == RawMetaType::kProcessStart && !start && take(buf, body, end, ps)) start = ps;
                             }));
  if (!start) return Error("'" + process_dir + "/meta' has no process start record yet");
  return *start;
}

// ---- RawThreadFile ---------------------------------------------------------

Result<std::unique_ptr<RawThreadFile>> RawThreadFile::open(const std::string& path, uint64_t first_segment) {
  std::unique_ptr<RawThreadFile> f(new RawThreadFile());
  f->path_ = path;
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path));
  const int fd = file.fd;
  const size_t size = static_cast<size_t>(file.size);
  if (size < sizeof(RawThreadHeader)) {
    ::close(fd);
    return Error("'" + path + "': too short for a thread header (" + std::to_string(size) + " bytes)");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) return system_error("cannot map '" + path + "'", e);
  f->map_ = m;
  f->map_size_ = size;
  std::memcpy(&f->header_, m, sizeof f->header_);
  if (std::memcmp(f->header_.magic, kRawThreadMagic, sizeof f->header_.magic) != 0)
    return Error("'" + path + "' is not a callscope thread file");
  if (f->header_.version != kRawVersion)
    return Error("'" + path + "': raw version " + std::to_string(f->header_.version) + " unknown");
  const RawThreadHeader& h = f->header_;
  if (h.ring_segments == 0) {
    if (size > kRawThreadHeaderSize)
      f->spans_.push_back({reinterpret_cast<const uint64_t*>(static_cast<const uint8_t*>(m) + kRawThreadHeaderSize),
                           (size - kRawThreadHeaderSize) / 8, 0});
    // The runtime records how far its chunks reach: a file shorter than
    // that was cut short, and its last events are gone.
    if (h.file_bytes > size) f->missing_bytes_ = h.file_bytes - size;
  } else {
    // Ring mode: the segments from first_segment (those before it are in
    // the trace `record` streamed) to the one being written. A segment whose
    // slot was reused, or that a file cut short no longer holds, is missing.
    const uint64_t seg = h.segment_bytes;
    if (seg == 0 || seg % 8 != 0 || seg > (uint64_t{1} << 30) || h.ring_segments > 4096)
      return Error("'" + path + "': damaged ring description in the thread header");
    const uint64_t oldest_in_ring = h.committed + 1 > h.ring_segments ? h.committed + 1 - h.ring_segments : 0;
    if (first_segment < oldest_in_ring) f->missing_before_ = oldest_in_ring - first_segment;
    const auto* ring = reinterpret_cast<const uint8_t*>(m) + kRawThreadHeaderSize;
    const uint64_t ring_room = size - kRawThreadHeaderSize;
    uint64_t gap = 0;  // complete segments holding nothing, since the last span
    for (uint64_t i = std::max(first_segment, oldest_in_ring); i <= h.committed; ++i) {
      const uint64_t at = (i % h.ring_segments) * seg;
      if (at + seg > ring_room) {
        f->missing_after_ = h.committed + 1 - i;  // the file was cut short here
        break;
      }
      const auto* words = reinterpret_cast<const uint64_t*>(ring + at);
      // A writer leaves a segment only when it is full: a complete one that
      // holds nothing was given back (zeroed) by a recorder whose block of
      // it is gone, or lost its pages. The segment being written may be empty.
      if (i < h.committed && std::all_of(words, words + seg / 8, [](uint64_t w) { return w == 0; })) {
        ++gap;
        continue;
      }
      if (f->spans_.empty()) {
        f->missing_before_ += gap;
      } else {
        f->missing_inside_ += gap;
      }
      f->spans_.push_back({words, seg / 8, f->spans_.empty() ? 0 : gap});
      gap = 0;
    }
  }
  ::madvise(m, size, MADV_SEQUENTIAL);
  return f;
}

bool RawThreadFile::take_gap(uint64_t& lost_events) {
  if (span_ >= spans_.size() || spans_[span_].missing_before == 0) return false;
  lost_events = events_estimate(spans_[span_].missing_before);
  return next_span();
}

std::string RawThreadFile::damage() const {
  std::string parts;
  auto add = [&](uint64_t n, const char* where) {
    if (!n) return;
    if (!parts.empty()) parts += ", ";
    parts += std::to_string(n) + " ring segment" + (n == 1 ? "" : "s") + " " + where;
  };
  add(missing_before_, "before the first one left (their slots were reused)");
  add(missing_inside_, "in the middle (given back or never written, and not in the trace)");
  add(missing_after_, "at the end (the file was cut short)");
  uint64_t events = events_estimate(missing_before_ + missing_inside_ + missing_after_);
  if (missing_bytes_) {
    if (!parts.empty()) parts += ", ";
    parts += std::to_string(missing_bytes_) + " bytes of events at the end (the file was cut short)";
    events += missing_bytes_events();
  }
  if (parts.empty()) return "";
  return "'" + path_ + "': missing " + parts + ": about " + std::to_string(events) +
         " events, marked lost in the trace";
}

bool RawThreadFile::next_span() {
  if (span_ >= spans_.size()) return false;
  words_ = spans_[span_].words;
  n_words_ = spans_[span_].n;
  i_ = 0;
  ++span_;
  return true;
}

RawThreadFile::~RawThreadFile() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace callscope::format

namespace callscope::format {

Result<RawTree> read_prof_file(const std::string& path) {
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path));
  const int fd = file.fd;
  const uint64_t size = file.size;
  void* m = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (m == MAP_FAILED) return Error("'" + path + "' is empty or cannot be mapped");
  const auto* base = static_cast<const uint8_t*>(m);
  RawProfHeader h;
  Result<RawTree> out = Error("'" + path + "' is not a callscope profile file");
  if (size >= sizeof h) {
    std::memcpy(&h, base, sizeof h);
    if (std::memcmp(h.magic, kRawProfMagic, sizeof h.magic) == 0 && h.nodes_offset <= size &&
        h.stack_offset <= size) {
      RawTree t;
      t.tid = h.tid;
      t.start_tick = h.start_tick;
      t.end_tick = h.end_tick;
      t.dropped_calls = h.dropped_calls;
      t.clear_seq = h.clear_seq;
      t.switches_seen = h.switches_seen;
      t.flags = h.flags;
      std::memcpy(t.name, h.name, sizeof t.name);
      uint64_t n = std::min<uint64_t>(h.node_count, (size - h.nodes_offset) / sizeof(RawProfNode));
      t.nodes.resize(n);
      if (n) std::memcpy(t.nodes.data(), base + h.nodes_offset, n * sizeof(RawProfNode));
      for (uint64_t i = 1; i < n; ++i)  // a node whose parent is not before it is damage
        if (t.nodes[i].parent >= i) t.nodes[i].parent = 0;
      const uint64_t depth =
          std::min<uint64_t>({h.depth, h.stack_capacity, (size - h.stack_offset) / sizeof(RawProfFrame)});
      t.open.resize(depth);
      if (depth) std::memcpy(t.open.data(), base + h.stack_offset, depth * sizeof(RawProfFrame));
      out = std::move(t);
    }
  }
  ::munmap(m, size);
  return out;
}

Status read_dumps(const std::string& path, std::vector<std::string>& warnings,
                  const std::function<Status(RawSnapshot&)>& f) {
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path));
  FILE* in = ::fdopen(file.fd, "rb");
  if (!in) {
    const int e = errno;
    ::close(file.fd);
    return system_error("cannot open '" + path + "'", e);
  }
  std::unique_ptr<FILE, int (*)(FILE*)> guard(in, std::fclose);
  const uint64_t file_size = file.size;
  uint64_t offset = 0;
  for (;;) {
    RawSnapshot s;
    const size_t got = std::fread(&s.header, 1, sizeof s.header, in);
    if (got == 0) return ok_status();
    auto cut = [&] {
      warnings.push_back("'" + path + "': the snapshot at offset " + std::to_string(offset) +
                         " is incomplete (the process ended while writing it); ignored");
      return ok_status();
    };
    // Sizes come from a file a dying process may have cut short: nothing is
    // allocated beyond what the file holds.
    if (got == sizeof s.header && std::memcmp(s.header.magic, kRawDumpMagic, sizeof s.header.magic) != 0) {
      warnings.push_back("'" + path + "': no snapshot at offset " + std::to_string(offset) +
                         " (damaged); the rest of the file is ignored");
      return ok_status();
    }
    if (got != sizeof s.header || s.header.bytes < sizeof s.header || s.header.bytes > file_size - offset)
      return cut();
    uint64_t left = s.header.bytes - sizeof s.header;
    bool ok = true;
    for (uint32_t i = 0; ok && i < s.header.threads; ++i) {
      RawDumpThread dt;
      if (left < sizeof dt || std::fread(&dt, sizeof dt, 1, in) != 1) {
        ok = false;
        break;
      }
      left -= sizeof dt;
      if (dt.nodes > left / sizeof(RawProfNode)) {
        ok = false;
        break;
      }
      RawTree t;
      t.tid = dt.tid;
      t.start_tick = dt.start_tick;
      t.dropped_calls = dt.dropped_calls;
      t.nodes.resize(dt.nodes);
      if (dt.nodes && std::fread(t.nodes.data(), sizeof(RawProfNode), dt.nodes, in) != dt.nodes) ok = false;
      left -= dt.nodes * sizeof(RawProfNode);
      for (uint64_t k = 1; k < t.nodes.size(); ++k)
        if (t.nodes[k].parent >= k) t.nodes[k].parent = 0;
      s.threads.push_back(std::move(t));
    }
    if (!ok || left != 0) return cut();
    CALLSCOPE_CHECK(f(s));
    offset += s.header.bytes;
  }
}

}  // namespace callscope::format
