#include "cli/preallocator.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "format/trace_format.h"

namespace callscope::cli {
namespace {

namespace fmt = callscope::format;

constexpr auto kPoll = std::chrono::microseconds(500);
constexpr int kScanEvery = 20;                    // polls between directory scans
constexpr uint64_t kMaxAheadBytes = 16ull << 20;  // per thread file

}  // namespace

Preallocator::Preallocator(std::string session) : session_(std::move(session)) {
  thread_ = std::thread([this] { run(); });
}

Preallocator::~Preallocator() { stop(); }

void Preallocator::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close_all();
}

void Preallocator::close_all() {
  for (auto& [path, f] : files_) {
    if (f.header) ::munmap(f.header, fmt::kRawThreadHeaderSize);
    if (f.fd >= 0) ::close(f.fd);
  }
  files_.clear();
}

void Preallocator::scan_directories() {
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
      if (files_.count(path)) continue;
      File f;
      f.fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (f.fd < 0) continue;
      // A writer creates the file, then sizes it: mapping the header of a
      // file still empty would fault (SIGBUS) on the first read. Next scan.
      struct stat st {};
      if (::fstat(f.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < fmt::kRawThreadHeaderSize) {
        ::close(f.fd);
        continue;
      }
      void* h = ::mmap(nullptr, fmt::kRawThreadHeaderSize, PROT_READ, MAP_SHARED, f.fd, 0);
      if (h == MAP_FAILED) {
        ::close(f.fd);
        continue;
      }
      f.header = h;
      files_.emplace(path, f);
    }
    ::closedir(d);
  }
  ::closedir(top);
}

// Keeps a writer that is moving two chunks ahead; leaves idle or finished
// threads alone (2,000 short threads must not cost 2,000 chunks).
void Preallocator::top_up(File& f) {
  const auto* h = static_cast<const volatile fmt::RawThreadHeader*>(f.header);
  const uint64_t mapped = h->mapped_end;
  const uint64_t chunk = h->chunk_bytes;
  if (h->end_tick != 0 || mapped == 0 || mapped == f.last_mapped_end) return;
  const bool first_sight = f.last_mapped_end == 0;
  f.last_mapped_end = mapped;
  if (first_sight) return;  // only a writer seen moving to a new chunk is helped
  uint64_t ahead = 2 * (chunk < (4u << 20) ? chunk * 4 : chunk);
  if (ahead > kMaxAheadBytes) ahead = kMaxAheadBytes;
  const uint64_t target = mapped + ahead;
  if (f.allocated_to < mapped) f.allocated_to = mapped;
  if (target <= f.allocated_to) return;
  if (::fallocate(f.fd, 0, static_cast<off_t>(f.allocated_to), static_cast<off_t>(target - f.allocated_to)) == 0) {
    allocated_ += target - f.allocated_to;
    f.allocated_to = target;
  }
}

void Preallocator::run() {
  for (int poll = 0; !stop_; ++poll) {
    if (poll % kScanEvery == 0) scan_directories();
    for (auto& [path, f] : files_) top_up(f);
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace callscope::cli
