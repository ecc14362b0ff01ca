#include "cli/drainer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "format/trace_format.h"

namespace callscope::cli {
namespace {

namespace fmt = callscope::format;

// A ring holds 16 x 256 KiB = 4 MiB, about 100 ms of a single thread calling
// at full speed; polling every 200 us leaves it far from full.
constexpr auto kPoll = std::chrono::microseconds(200);
constexpr int kScanEvery = 25;  // polls between directory scans (5 ms)
constexpr uint64_t kRingBytes = uint64_t{fmt::kRingSegments} * fmt::kSegmentBytes;

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

Drainer::Drainer(std::string session) : session_(std::move(session)) {
  // One descriptor per live thread of the program: take the hard limit.
  // The program was forked before, and keeps the limits it had.
  struct rlimit r {};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  thread_ = std::thread([this] { run(); });
}

Drainer::~Drainer() { stop(); }

void Drainer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close_all();
}

void Drainer::close_all() {
  for (auto& [path, f] : files_) {
    if (f.map) ::munmap(f.map, f.map_bytes);
    if (f.fd >= 0) ::close(f.fd);
    if (f.spill >= 0) ::close(f.spill);
  }
  files_.clear();
}

void Drainer::scan_directories() {
  DIR* top = ::opendir(session_.c_str());
  if (!top) return;
  while (dirent* p = ::readdir(top)) {
    if (p->d_name[0] == '.' || (p->d_type != DT_DIR && p->d_type != DT_UNKNOWN)) continue;
    const std::string dir = session_ + "/" + p->d_name;
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() < 4 || name[0] != 't' || name.compare(name.size() - 3, 3, ".ev") != 0) continue;
      const std::string path = dir + "/" + name;
      if (files_.count(path) || finished_.count(path)) continue;
      int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      // A writer creates its file, then sizes it: a file not yet of ring
      // size is left for the next scan (mapping past its end would fault).
      struct stat st {};
      if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < fmt::kRawThreadHeaderSize + kRingBytes) {
        ::close(fd);
        continue;
      }
      File f;
      f.fd = fd;
      f.map_bytes = fmt::kRawThreadHeaderSize + kRingBytes;
      void* m = ::mmap(nullptr, f.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) {
        ::close(fd);
        continue;
      }
      f.map = m;
      std::string spill = path;
      spill.replace(spill.size() - 3, 3, ".spill");
      f.spill = ::open(spill.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      files_.emplace(path, f);
    }
    ::closedir(d);
  }
  ::closedir(top);
}

void Drainer::drain(File& f) {
  auto* h = static_cast<fmt::RawThreadHeader*>(f.map);
  // A file in grow mode (the writer could not set up its ring) needs nothing.
  if (f.failed || __atomic_load_n(&h->ring_segments, __ATOMIC_ACQUIRE) != fmt::kRingSegments) return;
  uint8_t* ring = static_cast<uint8_t*>(f.map) + fmt::kRawThreadHeaderSize;
  for (;;) {
    const uint64_t done = __atomic_load_n(&h->drained, __ATOMIC_ACQUIRE);
    if (done >= __atomic_load_n(&h->committed, __ATOMIC_ACQUIRE)) return;
    uint8_t* seg = ring + (done % fmt::kRingSegments) * fmt::kSegmentBytes;
    if (f.spill < 0 || !write_all(f.spill, seg, fmt::kSegmentBytes)) {
      // No room for the spill: the writer must not wait for us any more.
      f.failed = true;
      __atomic_store_n(&h->drain_failed, 1, __ATOMIC_RELEASE);
      return;
    }
    std::memset(seg, 0, fmt::kSegmentBytes);
    __atomic_store_n(&h->drained, done + 1, __ATOMIC_RELEASE);
    ++segments_;
  }
}

void Drainer::run() {
  for (int poll = 0;; ++poll) {
    const bool last = stop_;
    if (poll % kScanEvery == 0 || last) scan_directories();
    for (auto it = files_.begin(); it != files_.end();) {
      File& f = it->second;
      drain(f);
      // A thread that has ended, with all its complete segments drained, is
      // done: its last segment stays in the ring for the reader.
      const auto* h = static_cast<const fmt::RawThreadHeader*>(f.map);
      if (__atomic_load_n(&h->end_tick, __ATOMIC_ACQUIRE) != 0 &&
          __atomic_load_n(&h->drained, __ATOMIC_ACQUIRE) >= __atomic_load_n(&h->committed, __ATOMIC_ACQUIRE)) {
        ::munmap(f.map, f.map_bytes);
        ::close(f.fd);
        if (f.spill >= 0) ::close(f.spill);
        finished_.insert(it->first);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    if (last) return;
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace callscope::cli
