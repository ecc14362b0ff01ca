#include "format/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <map>

#include "common/files.h"
#include "format/resident.h"
#include "format/varint.h"

namespace callscope::format {

std::string TraceInfo::block_device(uint64_t dev) const {
  auto it = block_devices.find(static_cast<uint32_t>(dev));
  if (it != block_devices.end() && dev <= 0xffffffffu) return it->second;
  return std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xfffff);
}
namespace {

bool valid_header(const BlockHeader& h) {
  return h.magic == kBlockMagic && h.check == header_check(&h, offsetof(BlockHeader, check));
}

// Metadata payload: count, record size, records, strings.
template <class R>
Result<std::vector<std::pair<R, const uint8_t*>>> parse_records(const std::vector<uint8_t>& p,
                                                                 const uint8_t** strings, size_t* strings_size) {
  if (p.size() < 8) return Error("metadata payload too short");
  uint32_t count, rsize;
  std::memcpy(&count, p.data(), 4);
  std::memcpy(&rsize, p.data() + 4, 4);
  if (rsize == 0 || (p.size() - 8) / rsize < count) return Error("record table larger than its block");
  std::vector<std::pair<R, const uint8_t*>> out;
  for (uint32_t i = 0; i < count; ++i) {
    R r{};
    std::memcpy(&r, p.data() + 8 + size_t{i} * rsize, std::min<size_t>(rsize, sizeof r));  // newer minor versions append fields
    out.push_back({r, nullptr});
  }
  *strings = p.data() + 8 + size_t{count} * rsize;
  *strings_size = p.size() - 8 - size_t{count} * rsize;
  return out;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The range of every field of a file header (docs/trace-format.md, "File
// header"); the message says which field is wrong. Magic and major version
// are checked before.
Status check_file_header(const FileHeader& h, uint64_t file_size) {
  const bool known_minor = h.version_minor <= kTraceVersionMinor;
  if (known_minor ? h.header_size != sizeof(FileHeader)
                  : h.header_size < sizeof(FileHeader) || h.header_size > 4096 || h.header_size % 8 != 0)
    return Error("header_size is " + std::to_string(h.header_size) + ", not " + std::to_string(sizeof(FileHeader)));
  if (h.header_size > file_size)
    return Error("header_size " + std::to_string(h.header_size) + " is past the end of the file (" +
                 std::to_string(file_size) + " bytes)");
  if (h.clock != static_cast<uint32_t>(ClockKind::kTsc) && h.clock != static_cast<uint32_t>(ClockKind::kMonotonic))
    return Error("unknown clock kind " + std::to_string(h.clock) + " (1: TSC, 2: CLOCK_MONOTONIC)");
  if (h.clock == static_cast<uint32_t>(ClockKind::kMonotonic) && h.ticks_per_ns != 1.0)
    return Error("ticks_per_ns is " + number(h.ticks_per_ns) + " for CLOCK_MONOTONIC, whose ticks are ns (1)");
  if (!(h.ticks_per_ns >= kMinTicksPerNs && h.ticks_per_ns <= kMaxTicksPerNs))  // NaN and inf too
    return Error("ticks_per_ns is " + number(h.ticks_per_ns) + ", not a TSC rate (" + number(kMinTicksPerNs) +
                 " to " + number(kMaxTicksPerNs) + " ticks per ns)");
  constexpr uint64_t kMaxNs = uint64_t{1} << 63;  // clock_gettime's time_t: no clock reads past it
  if (h.origin_mono_ns >= kMaxNs || h.origin_realtime_ns >= kMaxNs)
    return Error("origin time out of range (" + std::to_string(h.origin_mono_ns) + ", " +
                 std::to_string(h.origin_realtime_ns) + " ns)");
  if (known_minor && h.flags != 0) return Error("unknown flags " + std::to_string(h.flags));
  if (known_minor && (h.reserved != 0 || h.reserved2 != 0)) return Error("reserved bytes are not zero");
  if (h.version_minor < kTraceMinorHeaderCheck) {
    if (h.check != 0) return Error("reserved bytes are not zero");
  } else if (h.check != header_check(&h, offsetof(FileHeader, check))) {
    return Error("its check does not match its bytes");
  }
  return ok_status();
}

std::string str(const uint8_t* strings, size_t size, StrRef r) {
  if (r.offset > size || r.length > size - r.offset) return "";
  return std::string(reinterpret_cast<const char*>(strings) + r.offset, r.length);
}

}  // namespace

std::string hex_string(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::unique_ptr<TraceReader> TraceReader::growing(const FileHeader& header, const TraceInfo& info) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->header_ = header;
  r->info_ = info;
  r->complete_ = true;
  return r;
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path, Damage damage) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = path;
  CALLSCOPE_TRY(const OpenedFile file, open_regular_file(path, "a raw session? try 'callscope finish DIR'"));
  const int fd = file.fd;
  r->size_ = file.size;
  if (r->size_ < sizeof(FileHeader)) {
    ::close(fd);
    return Error("'" + path + "' is not a callscope trace (" + std::to_string(r->size_) +
                 " bytes, shorter than a trace header)");
  }
  void* m = ::mmap(nullptr, r->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) return system_error("cannot map '" + path + "'", e);
  r->data_ = static_cast<const uint8_t*>(m);
  std::memcpy(&r->header_, r->data_, sizeof r->header_);
  if (std::memcmp(r->header_.magic, kTraceMagic, sizeof kTraceMagic) != 0)
    return Error("'" + path + "' is not a callscope trace (bad magic)");
  if (r->header_.version_major != kTraceVersionMajor)
    return Error("'" + path + "' is trace format " + std::to_string(r->header_.version_major) + "." +
                 std::to_string(r->header_.version_minor) + "; this callscope reads " +
                 std::to_string(kTraceVersionMajor) + ".x");
  if (Status st = check_file_header(r->header_, r->size_); !st)
    return Error("'" + path + "': damaged trace header (the first " + std::to_string(sizeof(FileHeader)) +
                 " bytes): " + st.error().message() +
                 "; the file was changed after callscope wrote it: read an intact copy, or record again");
  CALLSCOPE_CHECK(r->index_blocks());
  CALLSCOPE_CHECK(r->read_metadata());
  if (Status st = r->check_references(damage); !st)
    return Error("damaged trace '" + path + "': " + st.error().message());
  return r;
}

TraceReader::~TraceReader() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void TraceReader::problem(const BlockRef& b, const std::string& what) {
  // Once each: a damaged block is met again by every pass that reads it
  // (info verifies every block, then reads each thread's events).
  std::string p = "block " + std::to_string(b.number) + " at offset " + std::to_string(b.offset) + ": " + what;
  if (std::find(problems_.begin(), problems_.end(), p) == problems_.end()) problems_.push_back(std::move(p));
}

Status TraceReader::index_blocks() {
  uint64_t off = header_.header_size;
  uint32_t number = 0;
  while (off < size_) {
    BlockHeader h{};
    if (size_ - off < sizeof h) {
      problems_.push_back("offset " + std::to_string(off) + ": " + std::to_string(size_ - off) +
                          " trailing bytes, too few for a block (truncated file)");
      break;
    }
    std::memcpy(&h, data_ + off, sizeof h);
    if (!valid_header(h)) {
      // The damaged block keeps its number; resynchronize at the next offset
      // that holds a valid block header.
      const uint32_t damaged = number++;
      uint64_t next = off + 1;
      for (; next + sizeof h <= size_; ++next) {
        if (std::memcmp(data_ + next, &kBlockMagic, 4) != 0) continue;
        std::memcpy(&h, data_ + next, sizeof h);
        if (valid_header(h)) break;
      }
      problems_.push_back("block " + std::to_string(damaged) + " at offset " + std::to_string(off) +
                          ": damaged block header; " +
                          (next + sizeof h <= size_ ? "skipped " + std::to_string(next - off) + " bytes to the next block"
                                                    : "no valid block follows"));
      if (next + sizeof h > size_) break;
      off = next;
    }
    BlockRef b{number++, off, h};
    if (h.stored_size > size_ - off - sizeof h) {
      problem(b, "payload of " + std::to_string(h.stored_size) + " bytes runs past the end of the file (truncated)");
      break;
    }
    off += sizeof h + h.stored_size;
    // Sizes are checked before anything is allocated for them: a header
    // whose check holds can still claim 4 GiB once decompressed.
    if (h.raw_size > kMaxBlockRawBytes || (!(h.flags & kBlockCompressed) && h.raw_size != h.stored_size)) {
      problem(b, "payload of " + std::to_string(h.raw_size) + " bytes once decompressed, " +
                     (h.raw_size > kMaxBlockRawBytes ? "more than any block callscope writes"
                                                     : "but it is stored uncompressed in " + std::to_string(h.stored_size)));
      continue;
    }
    blocks_.push_back(b);
    if (h.type == static_cast<uint16_t>(BlockType::kEnd)) complete_ = true;
  }
  if (!complete_) problems_.push_back("the trace has no end block: it is incomplete (the writer was interrupted?)");
  return ok_status();
}

Result<std::vector<uint8_t>> TraceReader::payload(const BlockRef& b) {
  std::vector<uint8_t> out;
  CALLSCOPE_CHECK(payload_into(b, out, nullptr));
  return out;
}

// Decompresses into `out`, reusing its memory (and `dctx` when given): a
// reader of every event goes through hundreds of blocks.
Status TraceReader::payload_into(const BlockRef& b, std::vector<uint8_t>& out, ZSTD_DCtx_s* dctx) {
  const uint8_t* p = data_ + b.offset + sizeof(BlockHeader);
  if (!(b.header.flags & kBlockCompressed)) {
    out.assign(p, p + b.header.stored_size);
    return ok_status();
  }
  // The frame states its own size: trust the header's raw_size (and
  // allocate it) only when both agree.
  if (ZSTD_getFrameContentSize(p, b.header.stored_size) != b.header.raw_size)
    return Error("the compressed frame's size does not match the block header");
  out.resize(b.header.raw_size);
  const size_t n = dctx ? ZSTD_decompressDCtx(dctx, out.data(), out.size(), p, b.header.stored_size)
                        : ZSTD_decompress(out.data(), out.size(), p, b.header.stored_size);
  if (ZSTD_isError(n)) return Error(std::string("cannot decompress: ") + ZSTD_getErrorName(n));
  if (n != b.header.raw_size)
    return Error("decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(b.header.raw_size));
  return ok_status();
}

size_t TraceReader::verify_payloads() {
  size_t bad = 0;
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents)) continue;  // metadata was read at open
    auto p = payload(b);
    if (!p) {
      problem(b, p.error().message());
      ++bad;
    }
  }
  std::vector<ProfileNodeRecord> nodes;
  for (const BlockRef& b : profile_blocks_) {
    if (Status st = decode_tree(b, nodes); !st) {
      problem(b, st.error().message());
      ++bad;
    }
  }
  return bad;
}

Status TraceReader::read_metadata() {
  for (const BlockRef& b : blocks_) {
    const auto type = static_cast<BlockType>(b.header.type);
    if (type == BlockType::kEvents || type == BlockType::kEnd || type == BlockType::kProfile) continue;
    // A table whose block is damaged is lost: what points into it is not
    // more damage (check_references).
    auto fail = [&](const Error& e) {
      problem(b, e.message());
      if (type == BlockType::kProcesses) processes_table_.lost = true;
      if (type == BlockType::kThreads) threads_table_.lost = true;
      if (type == BlockType::kDumps) dumps_table_.lost = true;
    };
    auto p = payload(b);
    if (!p) {
      fail(p.error());
      continue;
    }
    const uint8_t* strings = nullptr;
    size_t ssize = 0;
    switch (type) {
      case BlockType::kInfo: {
        auto recs = parse_records<InfoRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        if (recs->empty()) break;
        info_.record = recs->front().first;
        info_.argv = split_nul(str(strings, ssize, info_.record.cmdline));
        info_.cwd = str(strings, ssize, info_.record.cwd);
        info_.tool_version = str(strings, ssize, info_.record.tool_version);
        {
          // "MAJOR:MINOR NAME" lines; a line that is not one is skipped.
          std::stringstream lines(str(strings, ssize, info_.record.block_devices));
          for (std::string line; std::getline(lines, line);) {
            unsigned major = 0, minor = 0;
            char name[64] = {};
            if (std::sscanf(line.c_str(), "%u:%u %63s", &major, &minor, name) == 3 && major < 4096 &&
                minor < (1u << 20))
              info_.block_devices[major << 20 | minor] = name;
          }
        }
        break;
      }
      case BlockType::kProcesses: {
        auto recs = parse_records<ProcessRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        processes_table_.read = true;
        for (auto& [r, unused] : *recs)
          processes_.push_back({r, str(strings, ssize, r.exe), split_nul(str(strings, ssize, r.cmdline))});
        break;
      }
      case BlockType::kModules: {
        auto recs = parse_records<ModuleRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs)
          modules_.push_back({r, str(strings, ssize, r.path), hex_string(r.build_id, std::min<uint32_t>(r.build_id_len, 20))});
        break;
      }
      case BlockType::kThreads: {
        auto recs = parse_records<ThreadRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        threads_table_.read = true;
        for (auto& [r, unused] : *recs) threads_.push_back({r, str(strings, ssize, r.name)});
        break;
      }
      case BlockType::kDumps: {
        auto recs = parse_records<DumpRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        dumps_table_.read = true;
        for (auto& [r, unused] : *recs) dumps_.push_back(r);
        break;
      }
      case BlockType::kResident: {
        auto recs = parse_records<ResidentRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs) resident_.push_back({r, str(strings, ssize, r.path)});
        break;
      }
      case BlockType::kMarks: {
        auto recs = parse_records<MarkRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs)
          (r.kind == kMarkKindTag ? tags_ : marks_).push_back({r, str(strings, ssize, r.text)});
        break;
      }
      case BlockType::kThreadNames: {
        auto recs = parse_records<ThreadNameRecord>(*p, &strings, &ssize);
        if (!recs) { fail(recs.error()); break; }
        for (auto& [r, unused] : *recs) names_.emplace_back(r, str(strings, ssize, r.name));
        break;
      }
      default:
        break;  // a block type of a later minor version
    }
  }
  return ok_status();
}

namespace {

// "process 7", "thread 3": what a record names.
std::string named(const char* what, uint64_t index) { return std::string(what) + " " + std::to_string(index); }

std::string count_of(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

// Every index a record holds, against the table it points into. A record
// that names what a table read intact does not hold is damage: refused, or
// (kList) listed and pointed at a placeholder. Where the table itself was
// lost to a damaged block (already a problem) or never written (a trace
// cut short), each index it does not hold gets a placeholder of its own
// ("?"), so the records stay apart and nothing indexes past a table.
// Placeholders are bounded by the records that name them.
Status TraceReader::check_references(Damage damage) {
  std::vector<std::string> found;
  const size_t n_processes = processes_.size();
  std::map<uint64_t, uint32_t> process_placeholder;  // index named -> placeholder made for it
  // Returns the index to use for process `index` named by `who`.
  auto process_ref = [&](uint64_t index, const std::string& who) -> uint32_t {
    if (index < n_processes) return static_cast<uint32_t>(index);
    if (processes_table_.intact())
      found.push_back(who + " names " + named("process", index) + ", but the trace holds " +
                      count_of(n_processes, "process"));
    auto [it, fresh] = process_placeholder.try_emplace(index, static_cast<uint32_t>(processes_.size()));
    if (fresh) {
      ProcessInfo p;
      p.exe = "?";
      p.record.parent_index = -1;
      processes_.push_back(std::move(p));
    }
    return it->second;
  };
  for (size_t i = 0; i < n_processes; ++i) {
    int32_t& parent = processes_[i].record.parent_index;
    // A record that names itself is a zero-filled one (no parent), not
    // damage; nothing walks the chain of parents, so a longer loop is
    // harmless.
    if (parent >= 0 && static_cast<size_t>(parent) == i) parent = -1;
    if (parent == -1 || (parent >= 0 && static_cast<size_t>(parent) < n_processes)) continue;
    found.push_back("process record " + std::to_string(i) + " names " + named("parent process", static_cast<uint32_t>(parent)) +
                    ", but the trace holds " + count_of(n_processes, "process"));
    parent = -1;
  }
  for (size_t i = 0; i < modules_.size(); ++i)
    modules_[i].record.process_index = process_ref(modules_[i].record.process_index, "module record " + std::to_string(i));
  for (size_t i = 0; i < threads_.size(); ++i)
    threads_[i].record.process_index = process_ref(threads_[i].record.process_index, "thread record " + std::to_string(i));
  for (size_t i = 0; i < dumps_.size(); ++i)
    dumps_[i].process_index = process_ref(dumps_[i].process_index, "snapshot record " + std::to_string(i));
  const size_t n_threads = threads_.size();
  for (auto* marks : {&marks_, &tags_}) {
    for (size_t i = 0; i < marks->size(); ++i) {
      MarkRecord& m = (*marks)[i].record;
      const std::string who = std::string(marks == &tags_ ? "tag" : "mark") + " record " + std::to_string(i);
      m.process_index = process_ref(m.process_index, who);
      if (m.thread_index != ~0u && m.thread_index >= n_threads) {
        if (threads_table_.intact())
          found.push_back(who + " names " + named("thread", m.thread_index) + ", but the trace holds " +
                          count_of(n_threads, "thread"));
        m.thread_index = ~0u;
      }
    }
  }
  for (size_t i = 0; i < resident_.size(); ++i) {
    ResidentRecord& r = resident_[i].record;
    const std::string who = "resident-set record " + std::to_string(i);
    r.process_index = process_ref(r.process_index, who);
    if (r.kind < static_cast<uint8_t>(ResidentKind::kCode) || r.kind > static_cast<uint8_t>(ResidentKind::kOther)) {
      found.push_back(who + " has kind " + std::to_string(r.kind) + ", which no callscope writes");
      r.kind = static_cast<uint8_t>(ResidentKind::kOther);
    }
    if (r.reason < static_cast<uint8_t>(ResidentReason::kStart) || r.reason > static_cast<uint8_t>(ResidentReason::kExit)) {
      found.push_back(who + " has reason " + std::to_string(r.reason) + ", which no callscope writes");
      r.reason = static_cast<uint8_t>(ResidentReason::kInterval);
    }
  }
  for (auto& [r, name] : names_) {
    if (r.thread_index < n_threads) {
      threads_[r.thread_index].names.push_back({r.tick, std::move(name)});
    } else if (threads_table_.intact()) {
      found.push_back("a thread name record names " + named("thread", r.thread_index) + ", but the trace holds " +
                      count_of(n_threads, "thread"));
    }
  }
  names_.clear();
  // Block headers: the thread and snapshot of each call tree, the thread of
  // each event block. Such a block is skipped; without the thread table,
  // event blocks still say which thread they belong to, and their events
  // stay readable.
  auto block_damage = [&](const BlockRef& b, const std::string& what) {
    found.push_back("block " + std::to_string(b.number) + " at offset " + std::to_string(b.offset) + ": " + what);
  };
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kProfile)) continue;
    if (b.header.aux1 >= dumps_.size()) {
      if (dumps_table_.intact())
        block_damage(b, "a call tree of snapshot " + std::to_string(b.header.aux1) + ", but the trace holds " +
                            count_of(dumps_.size(), "snapshot"));
      continue;
    }
    if (b.header.aux0 >= n_threads) {
      if (threads_table_.intact())
        block_damage(b, "a call tree of " + named("thread", b.header.aux0) + ", but the trace holds " +
                            count_of(n_threads, "thread"));
      continue;
    }
    profile_blocks_.push_back(b);
  }
  for (const BlockRef& b : blocks_) {
    if (b.header.type != static_cast<uint16_t>(BlockType::kEvents) || b.header.aux0 < threads_.size()) continue;
    if (threads_table_.intact()) {
      block_damage(b, "events of " + named("thread", b.header.aux0) + ", but the trace holds " +
                          count_of(n_threads, "thread"));
      continue;
    }
    // Placeholders cost memory: a thread index far beyond what the blocks
    // could hold is damage, not a thread.
    if (b.header.aux0 > 16 * blocks_.size() + 4096) {
      block_damage(b, "events of " + named("thread", b.header.aux0) + ", more threads than the file could hold");
      continue;
    }
    while (threads_.size() <= b.header.aux0) {
      ThreadInfo t;
      t.name = "?";
      threads_.push_back(t);
    }
  }
  // A thread placeholder belongs to a process too.
  for (size_t i = n_threads; i < threads_.size(); ++i)
    if (threads_[i].record.process_index >= processes_.size())
      threads_[i].record.process_index = process_ref(threads_[i].record.process_index, "thread " + std::to_string(i));
  add_kernel_only_threads();
  if (found.empty()) return ok_status();
  if (damage == Damage::kList) {
    for (std::string& f : found) problems_.push_back(std::move(f));
    return ok_status();
  }
  std::string more = found.size() == 1 ? "" : " (and " + count_of(found.size() - 1, "more problem") + ")";
  return Error(found.front() + more + "; 'callscope info " + path_ + "' lists what can still be read");
}

// One call tree: as many nodes as the header says, each parent an earlier node.
Status TraceReader::decode_tree(const BlockRef& b, std::vector<ProfileNodeRecord>& out) {
  auto p = payload(b);
  if (!p) return p.error();
  if (p->size() != uint64_t{b.header.count} * sizeof(ProfileNodeRecord))
    return Error("a call tree of " + std::to_string(b.header.count) + " nodes in " + std::to_string(p->size()) + " bytes");
  out.resize(b.header.count);
  if (!out.empty()) std::memcpy(out.data(), p->data(), p->size());
  for (size_t i = 1; i < out.size(); ++i)  // parents come first; anything else is damage
    if (out[i].parent >= i)
      return Error("node " + std::to_string(i) + " has parent " + std::to_string(out[i].parent) + ", not an earlier node");
  return ok_status();
}

Result<std::vector<ProfileNodeRecord>> TraceReader::read_tree(uint32_t dump, uint32_t thread) {
  std::vector<ProfileNodeRecord> out;
  for (const BlockRef& b : profile_blocks_) {
    if (b.header.aux1 != dump || b.header.aux0 != thread) continue;
    if (Status st = decode_tree(b, out); !st) {
      problem(b, st.error().message());
      return Error("damaged trace: block " + std::to_string(b.number) + ": " + st.error().message());
    }
    break;
  }
  return out;
}

std::vector<uint32_t> TraceReader::tree_threads(uint32_t dump) const {
  std::vector<uint32_t> out;
  for (const BlockRef& b : profile_blocks_)
    if (b.header.aux1 == dump) out.push_back(b.header.aux0);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace callscope::format
