// Part of the recorder: while the program runs, a thread of `record` keeps
// the event files of busy threads allocated ahead of their writers.
//
// Why: on tmpfs every fresh page a writer touches costs a page allocation,
// zeroing and accounting in the program's own thread (about half the
// runtime's cost per call on the benchmark machine). fallocate here does that
// work on the recorder's core, so the writer maps pages that already exist.
// Nothing depends on it: a writer that outruns it allocates for itself.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <thread>

namespace callscope::cli {

class Preallocator {
 public:
  explicit Preallocator(std::string session);
  ~Preallocator();  // stops the thread
  Preallocator(const Preallocator&) = delete;
  Preallocator& operator=(const Preallocator&) = delete;
  void stop();
  uint64_t bytes_allocated() const { return allocated_.load(); }

 private:
  struct File {
    int fd = -1;
    void* header = nullptr;  // the writer's RawThreadHeader page, read-only
    uint64_t allocated_to = 0;
    uint64_t last_mapped_end = 0;
  };
  void run();
  void scan_directories();
  void top_up(File& f);
  void close_all();

  std::string session_;
  std::map<std::string, File> files_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> allocated_{0};
  std::thread thread_;
};

}  // namespace callscope::cli
