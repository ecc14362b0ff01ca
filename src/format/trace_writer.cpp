#include "format/trace_writer.h"

#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "format/varint.h"

namespace callscope::format {

namespace {

// The header as written: with its check (1.3 on; a test writing an older
// version gets the bytes it gave).
FileHeader sealed(FileHeader h) {
  if (h.version_minor >= kTraceMinorHeaderCheck) seal_file_header(h);
  return h;
}

}  // namespace

StrRef StringTable::add(std::string_view s) {
  StrRef r{static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(s.size())};
  bytes_.insert(bytes_.end(), s.begin(), s.end());
  return r;
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, const FileHeader& header,
                                                         int zstd_level, OutputClaim* claim) {
  std::unique_ptr<TraceWriter> w(new TraceWriter());
  w->path_ = path;
  w->claim_ = claim;
  w->tmp_path_ = path + ".tmp." + std::to_string(::getpid());
  w->file_ = std::fopen(w->tmp_path_.c_str(), "wbx");
  if (!w->file_) return system_error("cannot create '" + w->tmp_path_ + "'", errno);
  w->cctx_ = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(w->cctx_, ZSTD_c_compressionLevel, zstd_level);
  // Level 1 (record's default: it compresses while the program runs) looks
  // for matches of 7 bytes and more, not 6: on event columns that is as
  // small as level 3 and about a quarter faster than either.
  if (zstd_level == 1) ZSTD_CCtx_setParameter(w->cctx_, ZSTD_c_minMatch, 7);
  ZSTD_CCtx_setParameter(w->cctx_, ZSTD_c_checksumFlag, 1);
  const FileHeader h = sealed(header);
  CALLSCOPE_CHECK(w->write_bytes(&h, sizeof h));
  return w;
}

TraceWriter::~TraceWriter() {
  if (file_) std::fclose(file_);
  if (!finished_ && !keep_temporary_) ::unlink(tmp_path_.c_str());
  if (cctx_) ZSTD_freeCCtx(cctx_);
}

Status TraceWriter::write_bytes(const void* p, size_t n) {
  if (n && std::fwrite(p, 1, n, file_) != n) return system_error("cannot write '" + tmp_path_ + "'", errno);
  offset_ += n;
  return ok_status();
}

Status TraceWriter::write_block(BlockType type, uint32_t aux0, uint32_t count, uint64_t first_tick,
                                const std::vector<uint8_t>& raw, uint32_t aux1) {
  if (raw.size() > kMaxBlockRawBytes)  // readers take a larger block for damage
    return Error("a block of " + std::to_string(raw.size()) + " bytes is more than a trace holds (" +
                 std::to_string(kMaxBlockRawBytes) + ")");
  compressed_.resize(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress2(cctx_, compressed_.data(), compressed_.size(), raw.data(), raw.size());
  if (ZSTD_isError(n)) return Error(std::string("zstd: ") + ZSTD_getErrorName(n));
  BlockHeader h{};
  h.magic = kBlockMagic;
  h.type = static_cast<uint16_t>(type);
  h.flags = kBlockCompressed;
  h.stored_size = static_cast<uint32_t>(n);
  h.raw_size = static_cast<uint32_t>(raw.size());
  h.aux0 = aux0;
  h.count = count;
  h.first_tick = first_tick;
  h.aux1 = aux1;
  h.check = header_check(&h, offsetof(BlockHeader, check));
  CALLSCOPE_CHECK(write_bytes(&h, sizeof h));
  CALLSCOPE_CHECK(write_bytes(compressed_.data(), n));
  ++blocks_;
  return ok_status();
}

Status TraceWriter::finish(const EndRecord& end) {
  std::vector<uint8_t> raw(sizeof end);
  std::memcpy(raw.data(), &end, sizeof end);
  CALLSCOPE_CHECK(write_block(BlockType::kEnd, 0, 1, 0, raw));
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    return system_error("cannot write '" + tmp_path_ + "'", errno);
  std::fclose(file_);
  file_ = nullptr;
  if (claim_) {
    finished_ = true;  // complete: kept at the temporary path if the claim refuses the rename
    return claim_->publish(tmp_path_);
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    return system_error("cannot rename '" + tmp_path_ + "' to '" + path_ + "'", errno);
  finished_ = true;
  return ok_status();
}

Status TraceWriter::flush() {
  if (std::fflush(file_) != 0) return system_error("cannot write '" + tmp_path_ + "'", errno);
  return ok_status();
}

Status TraceWriter::rewrite_header(const FileHeader& header) {
  CALLSCOPE_CHECK(flush());
  const FileHeader h = sealed(header);
  if (::pwrite(::fileno(file_), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    return system_error("cannot write '" + tmp_path_ + "'", errno);
  return ok_status();
}

// ---- EventEncoder ----------------------------------------------------------

uint32_t EventEncoder::fn_lookup(uint64_t addr) {
  if (addr == last_fn_ && !fn_table_.empty()) return last_fn_index_;
  last_fn_ = addr;
  // Open addressing over (addr, index+1); grows at half load.
  if (fn_index_.empty()) fn_index_.assign(1024, {0, 0});
  if ((fn_table_.size() + 1) * 2 > fn_index_.size()) {
    std::vector<std::pair<uint64_t, uint32_t>> old(fn_index_.size() * 2, {0, 0});
    old.swap(fn_index_);
    for (auto& e : old) {
      if (!e.second) continue;
      size_t i = (e.first * 0x9e3779b97f4a7c15ull) >> 20 & (fn_index_.size() - 1);
      while (fn_index_[i].second) i = (i + 1) & (fn_index_.size() - 1);
      fn_index_[i] = e;
    }
  }
  size_t i = (addr * 0x9e3779b97f4a7c15ull) >> 20 & (fn_index_.size() - 1);
  while (fn_index_[i].second) {
    if (fn_index_[i].first == addr) return last_fn_index_ = fn_index_[i].second - 1;
    i = (i + 1) & (fn_index_.size() - 1);
  }
  fn_table_.push_back(addr);
  fn_index_[i] = {addr, static_cast<uint32_t>(fn_table_.size())};
  return last_fn_index_ = static_cast<uint32_t>(fn_table_.size() - 1);
}

void EventEncoder::begin_event(EventKind kind, uint64_t tick) {
  if (n_ == 0) {
    first_tick_ = tick;
    // The first delta of a block is from the block's first_tick.
    prev_tick_ = tick;
  }
  kinds_.byte(static_cast<uint8_t>(kind));
  dt_.varint(tick - prev_tick_);
  prev_tick_ = tick;
}

Status EventEncoder::add(EventKind kind, uint64_t tick, uint64_t addr, uint64_t sp, uint64_t arg) {
  begin_event(kind, tick);
  switch (kind) {
    case EventKind::kEntry:
    case EventKind::kEntryInherited: {
      fn_.varint(fn_lookup(addr));
      const uint64_t parent = stack_sp_.empty() ? 0 : stack_sp_.back();
      sp_.varint(zigzag_sp(parent, sp));
      stack_sp_.push_back(sp);
      break;
    }
    case EventKind::kExit:
    case EventKind::kExitUnwound:
    case EventKind::kExitTruncated:
      if (stack_sp_.empty()) return Error("internal: exit on an empty stack");
      stack_sp_.pop_back();
      break;
    case EventKind::kExitStray:
      fn_.varint(fn_lookup(addr));
      break;
    case EventKind::kLost:
    case EventKind::kMark:
    case EventKind::kTag:
    case EventKind::kWait:
      arg_.varint(arg);
      break;
    case EventKind::kPause:
    case EventKind::kResume:
      break;
    case EventKind::kAlloc:
    case EventKind::kFree:
      return Error("internal: memory events are added with memory()");
  }
  ++events_;
  if (++n_ == kEventsPerBlock) return flush();
  return ok_status();
}

Status EventEncoder::memory(EventKind kind, uint64_t tick, uint64_t ptr, uint64_t size, uint8_t op) {
  begin_event(kind, tick);
  arg_.varint(zigzag(static_cast<int64_t>(ptr - prev_ptr_)));
  prev_ptr_ = ptr;
  if (kind == EventKind::kAlloc) arg_.varint(size);
  arg_.varint(op);
  ++events_;
  if (++n_ == kEventsPerBlock) return flush();
  return ok_status();
}

Status EventEncoder::flush() {
  if (n_ == 0) return ok_status();
  std::vector<uint8_t> table;
  uint64_t prev = 0;
  for (uint64_t a : fn_table_) {
    put_varint(table, zigzag(static_cast<int64_t>(a - prev)));
    prev = a;
  }
  EventColumnsHeader h{};
  h.n_events = n_;
  h.n_functions = static_cast<uint32_t>(fn_table_.size());
  h.fn_table_bytes = static_cast<uint32_t>(table.size());
  h.kinds_bytes = static_cast<uint32_t>(kinds_.size);
  h.dt_bytes = static_cast<uint32_t>(dt_.size);
  h.fn_bytes = static_cast<uint32_t>(fn_.size);
  h.sp_bytes = static_cast<uint32_t>(sp_.size);
  h.arg_bytes = static_cast<uint32_t>(arg_.size);
  // The payload is built in the writer's buffer, kept from block to block
  // (and shared by the threads): a fresh one of about a megabyte, grown
  // column by column, cost page faults and copies every block.
  std::vector<uint8_t>& raw = writer_.scratch();
  size_t bytes = sizeof h + table.size();
  for (const Column* col : {&kinds_, &dt_, &fn_, &sp_, &arg_}) bytes += col->size;
  if (raw.capacity() < bytes) raw.reserve(bytes + bytes / 4);
  raw.resize(bytes);  // zeroes only what it adds beyond the last block's size
  uint8_t* p = raw.data();
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  if (!table.empty()) std::memcpy(p, table.data(), table.size());
  p += table.size();
  for (const Column* col : {&kinds_, &dt_, &fn_, &sp_, &arg_}) {
    if (col->size) std::memcpy(p, col->data(), col->size);
    p += col->size;
  }
  CALLSCOPE_CHECK(writer_.write_block(BlockType::kEvents, thread_, n_, first_tick_, raw, covered_));
  ++blocks_;
  n_ = 0;
  prev_ptr_ = 0;  // each block's pointers are deltas from 0 at its start
  fn_table_.clear();
  fn_index_.clear();
  fn_cache_.fill(FnSlot{0, 0});
  for (Column* col : {&kinds_, &dt_, &fn_, &sp_, &arg_}) col->size = 0;
  return ok_status();
}

}  // namespace callscope::format
