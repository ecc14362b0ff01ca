// Part of the recorder: while the program runs, a thread of `record` drains
// the ring of every traced thread (see src/runtime/thread.cpp, ring mode):
// it copies each complete segment to the thread's spill file, zeroes it and
// hands it back to the writer.
//
// Why: a writer that keeps reusing the same mapped pages pays no page
// allocation, zeroing or fault in the program's thread; on the benchmark
// machine that was about half of the runtime's cost per call. The copying
// happens here, on another core.
//
// Order of operations per segment, so that a recorder killed at any point
// loses nothing: append to the spill, then zero the segment, then publish
// `drained`. A reader takes the whole segments found in the spill first and
// the rest from the ring (src/format/raw_session.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace callscope::cli {

class Drainer {
 public:
  explicit Drainer(std::string session);
  ~Drainer();  // stops the thread
  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;
  void stop();
  uint64_t segments_drained() const { return segments_.load(); }

 private:
  struct File {
    int fd = -1;
    int spill = -1;
    void* map = nullptr;  // header page and ring, shared with the writer
    uint64_t map_bytes = 0;
    bool failed = false;
  };
  void run();
  void scan_directories();
  void drain(File& f);
  void close_all();

  std::string session_;
  std::map<std::string, File> files_;
  std::set<std::string> finished_;  // threads that ended and were drained
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> segments_{0};
  std::thread thread_;
};

}  // namespace callscope::cli
