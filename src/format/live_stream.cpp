#include "format/live_stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/files.h"
#include "format/finalize.h"
#include "format/trace_reader.h"

namespace callscope::format {
namespace {

constexpr uint64_t kRingBytes = uint64_t{kRingSegments} * kSegmentBytes;
// Directory scans (new processes and threads) every 5 ms however often the
// recorder polls: a thread's events wait in its ring until it is found.
constexpr double kScanEveryNs = 5e6;
constexpr uint64_t kSegmentWords = kSegmentBytes / 8;
// The tap: a round (directory scan, every ring read up to its writer)
// every LiveStream::tap_round_ns(), handed over then, or sooner when this
// many events wait.
constexpr size_t kTapBatch = 1 << 18;
// The tap's buffers are chunks of this many events, at least a segment's
// worth (a 256 KiB segment holds at most 32,768 events, but for the frames a
// gap closes and reopens: then a chunk grows), handed back for reuse whole.
constexpr size_t kTapChunkEvents = size_t{1} << 16;
// How far behind the round's start its horizon is: a writer reads the clock
// a few instructions before it stores the event.
constexpr double kTapMarginNs = 2e5;

// A placeholder header: the calibration is written over it at the end.
FileHeader initial_header(ClockKind clock) {
  FileHeader fh{};
  std::memcpy(fh.magic, kTraceMagic, sizeof fh.magic);
  fh.version_major = kTraceVersionMajor;
  fh.version_minor = kTraceVersionMinor;
  fh.header_size = sizeof fh;
  fh.clock = static_cast<uint32_t>(clock);
  fh.ticks_per_ns = 1.0;
  return fh;
}

// Whether a thread file's writer has given up its ring and writes to a
// growing file (runtime/thread.cpp). Not just "no ring_segments": a writer
// sizes its file for the ring before it stores ring_segments (open_ring),
// so a file of ring size may still be being set up -- taken for grow mode,
// it made a false "no ring" warning when the recorder's scan came between
// the two. Grow mode is the one that sets file_bytes (map_next_chunk); a
// ring never does.
bool grow_mode(const RawThreadHeader& h) {
  return __atomic_load_n(&h.ring_segments, __ATOMIC_ACQUIRE) != kRingSegments &&
         __atomic_load_n(&h.file_bytes, __ATOMIC_ACQUIRE) != 0;
}

// The same of a file not taken up (smaller than a ring), read from it;
// false when it cannot be read (gone: its thread was never traced).
bool grow_mode(const std::string& path) {
  RawThreadHeader h{};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool read_whole = ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  ::close(fd);
  return read_whole && grow_mode(h);
}

// What the tap says of a thread file without a ring (<pid>.<n>/t<tid>.ev).
std::string unseen_thread(const std::string& path) {
  unsigned pid = 0, n = 0, tid = 0;
  const size_t slash = path.find_last_of('/');
  const size_t before = path.find_last_of('/', slash - 1);
  std::sscanf(path.c_str() + before + 1, "%u.%u/t%u", &pid, &n, &tid);
  return "thread " + std::to_string(tid) + " of process " + std::to_string(pid) +
         " has no ring (one could not be allocated in the raw directory): the query does not see its events";
}

}  // namespace

LiveStream::~LiveStream() {
  for (auto& t : threads_) {
    if (t->map) ::munmap(t->map, t->map_bytes);
    if (t->fd >= 0) ::close(t->fd);
  }
}

Result<std::unique_ptr<LiveStream>> LiveStream::create(const std::string& session, const std::string& out_path,
                                                       ClockKind clock, uint64_t origin, int zstd_level, int meta_fd,
                                                       OutputClaim* claim) {
  std::unique_ptr<LiveStream> s(new LiveStream());
  s->session_ = session;
  s->clock_ = clock;
  s->origin_ = origin;
  s->meta_fd_ = meta_fd;
  CALLSCOPE_TRY(s->writer_, TraceWriter::create(out_path, initial_header(clock), zstd_level, claim));
  CALLSCOPE_CHECK(s->writer_->flush());
  char abs[PATH_MAX];
  const std::string tmp = ::realpath(s->writer_->temporary_path().c_str(), abs) ? abs : s->writer_->temporary_path();
  RawStream rs{origin, static_cast<uint32_t>(clock), static_cast<uint32_t>(tmp.size())};
  append_meta_record(meta_fd, RawMetaType::kStream, &rs, sizeof rs, tmp);
  s->writer_->keep_temporary();
  return s;
}

LiveStream::Thread* LiveStream::thread_of(const std::string& path) {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? nullptr : it->second;
}

Result<uint64_t> LiveStream::offset_of(const std::string& process_dir) {
  auto it = process_offsets_.find(process_dir);
  if (it != process_offsets_.end()) return it->second;
  CALLSCOPE_TRY(RawProcessStart ps, read_process_start(process_dir));
  // Every process of the run started after the origin was sampled.
  const uint64_t offset = ps.base_tick > origin_ ? ps.base_tick - origin_ : 0;
  process_offsets_[process_dir] = offset;
  return offset;
}

Status LiveStream::add_thread(const std::string& path, const std::string& rel, uint64_t offset) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ok_status();  // gone already: finalize reads what is left
  // A writer creates its file, then sizes it: a file not yet of ring size is
  // left for the next scan (mapping past its end would fault).
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kRawThreadHeaderSize + kRingBytes) {
    ::close(fd);
    not_ringed_.insert(path);
    return ok_status();
  }
  not_ringed_.erase(path);
  const uint64_t bytes = kRawThreadHeaderSize + kRingBytes;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    ::close(fd);
    return ok_status();
  }
  auto t = std::make_unique<Thread>();
  t->path = path;
  t->fd = fd;
  t->map = static_cast<uint8_t*>(m);
  t->map_bytes = bytes;
  t->index = static_cast<uint32_t>(threads_.size());
  t->record.tid = reinterpret_cast<const RawThreadHeader*>(m)->tid;
  t->offset = offset;
  t->events = std::make_unique<EventEncoder>(*writer_, t->index);
  t->stream = std::make_unique<RawStreamEncoder>(*t->events, offset, t->record);
  if (tap_) {
    t->tap = std::make_unique<Thread::Tap>();
    t->tap->stream = std::make_unique<BasicRawStreamEncoder<EventColumns>>(t->tap->out, offset, t->tap->record);
  }
  // Named before any block of it is written: `finish` must know whose they are.
  RawStreamThread rst{t->index, static_cast<uint32_t>(rel.size())};
  append_meta_record(meta_fd_, RawMetaType::kStreamThread, &rst, sizeof rst, rel);
  by_path_[path] = t.get();
  threads_.push_back(std::move(t));
  return ok_status();
}

Status LiveStream::scan() {
  DIR* top = ::opendir(session_.c_str());
  if (!top) return ok_status();
  // Processes in (pid, incarnation) order, threads by file name: found in
  // the same scan, they get thread indexes in the order finish would give.
  std::vector<std::pair<std::pair<unsigned, unsigned>, std::string>> dirs;
  while (dirent* p = ::readdir(top)) {
    unsigned pid = 0, n = 0;
    char tail = 0;
    if (std::sscanf(p->d_name, "%u.%u%c", &pid, &n, &tail) == 2) dirs.push_back({{pid, n}, p->d_name});
  }
  ::closedir(top);
  std::sort(dirs.begin(), dirs.end());
  for (const auto& [key, name] : dirs) {
    const std::string dir = session_ + "/" + name;
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    std::vector<std::string> files;
    while (dirent* e = ::readdir(d)) {
      const std::string f = e->d_name;
      if (f.size() > 4 && f[0] == 't' && f.compare(f.size() - 3, 3, ".ev") == 0) files.push_back(f);
    }
    ::closedir(d);
    if (files.empty()) continue;
    sort_thread_files(files);
    uint64_t offset = 0;
    bool have_offset = false;
    for (const std::string& f : files) {
      const std::string path = dir + "/" + f;
      if (by_path_.count(path)) continue;
      if (!have_offset) {
        auto off = offset_of(dir);
        if (!off) break;  // the process has not written its start record yet
        offset = *off;
        have_offset = true;
      }
      CALLSCOPE_CHECK(add_thread(path, name + "/" + f, offset));
    }
  }
  return ok_status();
}

Status LiveStream::encode_segment(Thread& t, uint64_t n) {
  if (tap_only_) return ok_status();  // the tap has read it: nothing to keep
  const uint64_t* words =
      reinterpret_cast<const uint64_t*>(t.map + kRawThreadHeaderSize + (n % kRingSegments) * kSegmentBytes);
  return t.stream->add_segment(t.decoder, words, kSegmentWords);
}

// The events of segments [released, consumed) are encoded: make them a block
// in the kernel's hands, then give the segments back.
Status LiveStream::flush_thread(Thread& t) {
  if (t.consumed == t.released) return ok_status();
  if (!tap_only_) {
    t.events->set_covered(static_cast<uint32_t>(t.consumed));
    CALLSCOPE_CHECK(t.events->flush());
    CALLSCOPE_CHECK(writer_->flush());
    ++blocks_;
  }
  auto* h = reinterpret_cast<RawThreadHeader*>(t.map);
  for (uint64_t n = t.released; n < t.consumed; ++n)
    std::memset(t.map + kRawThreadHeaderSize + (n % kRingSegments) * kSegmentBytes, 0, kSegmentBytes);
  __atomic_store_n(&h->drained, t.consumed, __ATOMIC_RELEASE);
  segments_ += t.consumed - t.released;
  t.released = t.consumed;
  return ok_status();
}

Status LiveStream::drain(Thread& t, bool peek) {
  auto* h = reinterpret_cast<RawThreadHeader*>(t.map);
  // A file in grow mode (the writer could not set up its ring) needs nothing
  // (and the tap cannot follow it: finalize reads it whole); one whose ring
  // is being set up, nothing yet.
  if (__atomic_load_n(&h->ring_segments, __ATOMIC_ACQUIRE) != kRingSegments) {
    if (grow_mode(*h) && t.tap && !t.tap->unseen_said) {
      t.tap->unseen_said = true;
      tap_warnings_.push_back(unseen_thread(t.path));
    }
    return ok_status();
  }
  // Closed first: then the segment being written is final.
  const bool closed = (__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & kRawThreadClosed) != 0;
  const uint64_t committed = __atomic_load_n(&h->committed, __ATOMIC_ACQUIRE);
  // The tap reads before any segment is given back.
  if (t.tap) tap_read(t, committed, closed, peek);
  while (t.consumed < committed) {
    CALLSCOPE_CHECK(encode_segment(t, t.consumed));
    ++t.consumed;
    // Blocks of a few segments each (a trace kept); the tap alone holds
    // nothing back from the writer.
    if (tap_only_ || t.consumed - t.released >= kHoldSegments) CALLSCOPE_CHECK(flush_thread(t));
  }
  // A writer that has filled its ring waits for us: do not keep it waiting
  // for kHoldSegments more.
  if (committed + 1 >= t.released + kRingSegments) CALLSCOPE_CHECK(flush_thread(t));
  // A thread that has exited writes no more: take its last segment too,
  // and let it go (a program that starts thousands of threads must not
  // hold a descriptor and 4 MiB of mapping for each until the end).
  if (closed) {
    for (; t.consumed <= committed; ++t.consumed) CALLSCOPE_CHECK(encode_segment(t, t.consumed));
    CALLSCOPE_CHECK(flush_thread(t));
    t.done = true;
    std::memcpy(&t.header, t.map, sizeof t.header);
    ::munmap(t.map, t.map_bytes);
    ::close(t.fd);
    t.map = nullptr;
    t.fd = -1;
  }
  return ok_status();
}

void LiveStream::set_tap(LiveTap* tap, double ticks_per_ns, bool tap_only) {
  // Threads started since the last scan join below, mid-run (found after
  // the tap is set, they would be read from their first event).
  if (!threads_.empty() || polls_ > 0) (void)scan();
  tap_ = tap;
  tap_only_ = tap_only;
  ticks_per_ns_ = ticks_per_ns;
  tap_horizon_ = last_peek_ = 0;
  tap_pending_ = 0;
  polls_ = 0;  // the next poll is a tap round
  // Threads already streaming: a query attached to a recording (query -p).
  for (auto& t : threads_) {
    if (t->tap) continue;
    t->tap = std::make_unique<Thread::Tap>();
    Thread::Tap& tp = *t->tap;
    tp.stream = std::make_unique<BasicRawStreamEncoder<EventColumns>>(tp.out, t->offset, tp.record);
    if (t->done) {
      // Over before the tap: said to have started and ended, nothing more.
      tp.ended = true;
      tp.end_tick = t->header.end_tick ? t->header.end_tick + t->offset : t->stream->last_tick();
      continue;
    }
    // From the first segment the trace has not taken, with the frames open
    // there, read as far as the writer has got and dropped: the tap sees
    // what happens from now on. The frames open now come first, as
    // inherited (they began before the tap).
    tp.segment = t->consumed;
    tp.stream->copy_state_from(*t->stream);
    if (t->map) {
      const auto* h = reinterpret_cast<const RawThreadHeader*>(t->map);
      if (__atomic_load_n(&h->ring_segments, __ATOMIC_ACQUIRE) == kRingSegments)
        tap_read(*t, __atomic_load_n(&h->committed, __ATOMIC_ACQUIRE), false, true);
    }
    tp.out.clear();
    tp.full.clear();
    for (const OpenFrame& f : tp.stream->open_frames())
      (void)tp.out.add(EventKind::kEntryInherited, f.raw_tick + t->offset, f.addr, f.sp, 0);
  }
  tap_pending_ = 0;
}

void LiveStream::clear_tap() {
  tap_ = nullptr;
  tap_only_ = false;
  for (auto& t : threads_) t->tap.reset();
  tap_warnings_.clear();
  tap_pending_ = 0;
}

// The tap reads segments [tap.segment, committed) whole, then (partial) the
// one being written as far as its events are stored whole: an event word
// not yet stored is still zero (the recorder zeroes each segment before
// giving it back), and never part of an event (raw_session.h). A thread
// that has ended (final) is read to its last event.
void LiveStream::tap_read(Thread& t, uint64_t committed, bool final, bool partial) {
  Thread::Tap& tp = *t.tap;
  if (tp.ended) return;
  auto feed = [&](const RawEvent& e) {
    if (!tp.stream->add_fast(e)) (void)tp.stream->add(e);  // into memory: cannot fail
    ++tap_pending_;
  };
  auto segment = [&](uint64_t n) {
    return reinterpret_cast<const uint64_t*>(t.map + kRawThreadHeaderSize + (n % kRingSegments) * kSegmentBytes);
  };
  // Room for a segment's events in the chunk being filled, or a new chunk.
  auto room = [&] {
    if (tp.out.capacity() - tp.out.size() >= kSegmentWords) return;
    if (!tp.out.empty()) tp.full.push_back(std::move(tp.out));
    if (!tap_->reuse(tp.out)) tp.out = EventColumns();
    tp.out.reserve(kTapChunkEvents);
  };
  RawEvent e;
  while (tp.segment < committed || (final && tp.segment == committed)) {
    const uint64_t* words = segment(tp.segment);
    if (tp.word < kSegmentWords && words[tp.word] != 0) room();  // no chunk for nothing
    size_t i = tp.word;
    while (tp.decoder.next(words, kSegmentWords, i, e)) feed(e);
    if (tp.segment == committed) {
      tp.word = i;
      break;
    }
    ++tp.segment;
    tp.word = 0;
  }
  if (final) {
    const auto* h = reinterpret_cast<const RawThreadHeader*>(t.map);
    tp.ended = true;
    tp.end_tick = h->end_tick ? h->end_tick + t.offset : tp.stream->last_tick();
    return;
  }
  if (!partial || tp.segment != committed) return;
  const uint64_t* words = segment(committed);
  size_t i = tp.word;
  // A chunk only for a thread with something to read (an idle thread holds none).
  if (i < kSegmentWords && __atomic_load_n(&words[i], __ATOMIC_ACQUIRE) != 0) room();
  while (i < kSegmentWords) {
    const uint64_t w0 = __atomic_load_n(&words[i], __ATOMIC_ACQUIRE);
    if (w0 == 0) break;
    const uint8_t k = static_cast<uint8_t>(w0 & 0xff);
    size_t words_of = 1;
    if (raw_kind_valid(k)) {
      words_of = raw_event_words(static_cast<RawKind>(k));
      bool whole = i + words_of <= kSegmentWords;
      for (size_t w = 1; whole && w < words_of; ++w) whole = __atomic_load_n(&words[i + w], __ATOMIC_ACQUIRE) != 0;
      if (!whole) break;
    }
    // One event (or one damaged word) at a time.
    if (tp.decoder.next(words, i + words_of, i, e)) feed(e);
  }
  tp.word = i;
}

void LiveStream::tap_deliver(uint64_t horizon, bool last) {
  tap_horizon_ = std::max(tap_horizon_, horizon);
  LiveDelivery d;
  d.horizon = tap_horizon_;
  d.last = last;
  for (auto& t : threads_) {
    if (!t->tap) continue;
    Thread::Tap& tp = *t->tap;
    if (!tp.start_sent) {
      tp.start_sent = true;
      const size_t slash = t->path.find_last_of('/');
      const size_t before = t->path.find_last_of('/', slash - 1);
      d.threads.push_back({t->index, t->path.substr(before + 1, slash - before - 1), t->record.tid,
                           t->header.start_tick + t->offset, false});
      // The header as mapped, or as last seen (a thread over before the tap).
      const RawThreadHeader* h = t->map ? reinterpret_cast<const RawThreadHeader*>(t->map) : &t->header;
      if (t->map || t->done) {
        d.threads.back().start_tick = h->start_tick + t->offset;
        d.threads.back().main = (h->flags & kRawThreadMain) != 0;
      }
    }
    for (EventColumns& c : tp.full) d.events.emplace_back(t->index, std::move(c));
    tp.full.clear();
    if (!tp.out.empty()) d.events.emplace_back(t->index, std::move(tp.out));
    tp.out = EventColumns();  // the next chunk comes when there are events
    if (tp.ended && !tp.end_sent) {
      tp.end_sent = true;
      d.ended.emplace_back(t->index, tp.end_tick);
    }
  }
  d.warnings = std::move(tap_warnings_);
  tap_warnings_.clear();
  tap_pending_ = 0;
  tap_->deliver(std::move(d));
}

void LiveStream::tap_rest() {
  if (!tap_) return;
  (void)scan();  // threads too short-lived for any poll to see
  // Files never of a ring's size now that the program has ended: threads
  // that wrote to a growing file (their ring could not be allocated). Not
  // a file whose ring was still being set up (a program left running when
  // the query ended), nor one that is gone.
  for (const std::string& path : not_ringed_)
    if (grow_mode(path)) tap_warnings_.push_back(unseen_thread(path));
  for (auto& t : threads_) {
    if (!t->tap || !t->map) continue;
    const auto* h = reinterpret_cast<const RawThreadHeader*>(t->map);
    if (__atomic_load_n(&h->ring_segments, __ATOMIC_ACQUIRE) != kRingSegments) continue;
    const uint64_t committed = __atomic_load_n(&h->committed, __ATOMIC_ACQUIRE);
    tap_read(*t, committed, true, false);
    // A thread of a program left running (the query ended first) may wait
    // for a segment: nothing will drain its ring any more, so the complete
    // segments go back now.
    if (tap_only_ && t->consumed < committed) {
      t->consumed = committed;
      (void)flush_thread(*t);
    }
  }
  tap_deliver(~uint64_t{0}, true);
}

LiveStream::WriterCounts LiveStream::writer_counts() const {
  WriterCounts c;
  for (const auto& t : threads_) {
    RawThreadHeader h = t->header;
    if (t->map) std::memcpy(&h, t->map, sizeof h);
    c.wait_ns += h.wait_ns;
    c.waits += h.waits;
    c.lost += h.lost_events;
  }
  return c;
}

void LiveStream::give_up() {
  failed_ = true;
  for (auto& t : threads_)
    if (t->map) __atomic_store_n(&reinterpret_cast<RawThreadHeader*>(t->map)->drain_failed, 1, __ATOMIC_RELEASE);
}

bool LiveStream::holding() const {
  for (const auto& t : threads_)
    if (!t->done && t->consumed > t->released) return true;
  return false;
}

Status LiveStream::flush_held() {
  if (failed_) return ok_status();
  Status st = ok_status();
  for (auto& t : threads_)
    if (st && !t->done && t->consumed > t->released) st = flush_thread(*t);
  return stop_on_failure(std::move(st));
}

Status LiveStream::stop_on_failure(Status st) {
  if (st) return st;
  // Writers must not wait for a recorder that cannot write: they drop, and
  // the streams say where.
  give_up();
  return st.error().context("cannot stream the trace");
}

Status LiveStream::poll() {
  if (failed_) return ok_status();
  Status st = ok_status();
  // A tap round: every thread read as far as it has got, the horizon where
  // the round began (less the margin), and what was read handed over.
  bool peek = false;
  const uint64_t now = ticks_since(clock_, origin_);
  uint64_t round = 0;
  if (tap_) {
    round = now;
    peek = polls_ == 0 || static_cast<double>(round - std::min(round, last_peek_)) >=
                              static_cast<double>(tap_round_ns_) * ticks_per_ns_;
    if (peek) last_peek_ = round;
  }
  const size_t threads_before = threads_.size(), pending_before = tap_pending_;
  size_t done_before = 0;
  for (const auto& t : threads_) done_before += t->done;
  if (polls_++ == 0 || peek || static_cast<double>(now - std::min(now, last_scan_)) >= kScanEveryNs * ticks_per_ns_) {
    last_scan_ = now;
    st = scan();
  }
  uint64_t taken = 0;  // segments completed since the last poll, by the thread with the most
  for (auto& t : threads_) {
    if (!st) break;
    if (t->done) continue;
    const uint64_t before = t->consumed;
    st = drain(*t, peek);
    taken = std::max(taken, t->consumed - before);
  }
  if (tap_) {
    size_t done_after = 0;
    for (const auto& t : threads_) done_after += t->done;
    if (taken != 0 || threads_.size() != threads_before || tap_pending_ != pending_before || done_after != done_before)
      tap_round_ns_ = kTapRoundMinNs;
    else if (peek)
      tap_round_ns_ = std::min(tap_round_ns_ * 2, kTapRoundMaxNs);
  }
  if (taken == 0)
    poll_wait_ns_ = std::min(poll_wait_ns_ * 2, kPollWaitMaxNs);
  else if (taken > 1)
    poll_wait_ns_ = std::max(poll_wait_ns_ / taken, kPollWaitMinNs);
  if (st && tap_ && (peek || tap_pending_ >= kTapBatch)) {
    const auto margin = static_cast<uint64_t>(kTapMarginNs * ticks_per_ns_);
    tap_deliver(peek ? round - std::min(round, margin) : 0, false);
  }
  return stop_on_failure(std::move(st));
}

Status LiveStream::finish_thread(Thread& t, uint64_t end_hint, std::span<const RawSwitch> switches) {
  // What is left in the ring (from the segment after the last one encoded
  // to the one being written) is read from the file: the same pages, and
  // the reader knows what is missing -- slots reused since (only after a
  // recorder died without writing their block), segments given back whose
  // block is gone, a file cut short -- and each is marked lost.
  if (t.map) {
    std::memcpy(&t.header, t.map, sizeof t.header);
    ::munmap(t.map, t.map_bytes);
    t.map = nullptr;
  }
  if (t.fd >= 0) ::close(t.fd);
  t.fd = -1;
  auto f = RawThreadFile::open(t.path, t.consumed);
  if (!f) {
    warnings_.push_back(f.error().message() + "; the last events of that thread are lost");
    t.record.torn_events = t.decoder.torn;
    t.events->set_covered(0);
    return t.stream->finish_thread(t.header, end_hint, switches);
  }
  CALLSCOPE_CHECK(t.stream->add_file(**f));
  if (std::string d = (*f)->damage(); !d.empty()) warnings_.push_back(d);
  t.record.torn_events = t.decoder.torn + (*f)->torn_events();
  t.header = (*f)->header();
  // The last block covers the ring up to the segment being written: if we
  // die before the trace is complete, `finish` takes nothing twice.
  const uint64_t through = t.header.ring_segments ? t.header.committed + 1 : 0;
  t.events->set_covered(static_cast<uint32_t>(std::max<uint64_t>(through, t.consumed)));
  return t.stream->finish_thread(t.header, end_hint, switches);
}

Result<std::unique_ptr<LiveStream>> LiveStream::recover(const RawSession& s, const std::string& out_path,
                                                        int zstd_level, OutputClaim* claim) {
  std::unique_ptr<LiveStream> live(new LiveStream());
  live->session_ = s.dir;
  live->clock_ = static_cast<ClockKind>(s.stream->clock);
  live->origin_ = s.stream->origin;
  live->failed_ = true;  // never polled: the program has ended
  CALLSCOPE_TRY(live->writer_, TraceWriter::create(out_path, initial_header(live->clock_), zstd_level, claim));
  std::unique_ptr<TraceReader> old;
  if (auto r = TraceReader::open(s.stream_path); r) {
    old = std::move(*r);
    old->allow_unlisted_threads();
    for (const std::string& p : old->problems()) live->warnings_.push_back("'" + s.stream_path + "': " + p);
  } else {
    live->warnings_.push_back(r.error().message() + "; the events record had taken from the rings are lost");
  }
  std::vector<std::pair<uint32_t, std::string>> named = s.stream_threads;
  std::sort(named.begin(), named.end());
  for (const auto& [index, rel] : named) {
    if (index != live->threads_.size()) continue;  // a damaged record: indexes are given in order
    const std::string path = s.dir + "/" + rel;
    auto t = std::make_unique<Thread>();
    t->path = path;
    t->index = index;
    uint64_t offset = 0;
    if (auto off = live->offset_of(path.substr(0, path.find_last_of('/'))); off) offset = *off;
    t->events = std::make_unique<EventEncoder>(*live->writer_, index);
    t->stream = std::make_unique<RawStreamEncoder>(*t->events, offset, t->record);
    // Its ring is read in finish_thread (RawThreadFile: what is missing is
    // marked lost there).
    // What the dead recorder wrote of this thread, event for event, and the
    // segments its blocks cover.
    uint64_t covered = 0;
    std::vector<OpenFrame> stack;
    uint64_t last = 0;
    bool any = false;
    if (old) {
      for (const BlockRef& b : old->blocks())
        if (b.header.type == static_cast<uint16_t>(BlockType::kEvents) && b.header.aux0 == index)
          covered = std::max<uint64_t>(covered, b.header.aux1);
      ThreadRecord& r = t->record;
      Status fed = ok_status();
      auto st2 = old->for_each_event(index, [&](const TraceEvent& e) {
        if (!any) r.start_tick = e.tick;
        any = true;
        last = e.tick;
        ++r.events;
        if (e.kind == EventKind::kEntry) ++r.calls;
        if (e.kind == EventKind::kLost) r.lost_events += e.arg;
        if (is_entry(e.kind)) stack.push_back({e.addr, e.sp, e.tick - std::min(e.tick, offset)});
        if (is_exit(e.kind) && !stack.empty()) stack.pop_back();
        fed = is_memory(e.kind) ? t->events->memory(e.kind, e.tick, e.addr, e.arg, e.op)
                                : t->events->add(e.kind, e.tick, e.addr, e.sp, e.arg);
        return fed.ok();
      });
      if (!st2) live->warnings_.push_back(st2.error().message());
      if (!fed) return fed.error().context("cannot copy the events of thread " + std::to_string(index));
    }
    t->stream->resume_from(std::move(stack), last, any, t->record.lost_events);
    t->consumed = t->released = covered;
    live->by_path_[path] = t.get();
    live->threads_.push_back(std::move(t));
  }
  return live;
}

}  // namespace callscope::format
