// Loading a shared library into a running process (callscope attach): from
// a thread of its own that the library's constructors run on, never from a
// thread of the program's that may be inside the allocator.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace callscope::inject {

struct LoadRequest {
  std::string library;  // absolute path, as the process sees it
  std::string entry;    // a function of the library to call after loading, int f(const char*); "" for none
  std::string arg;      // its argument
  // The loading thread's name (prctl PR_SET_NAME, up to 15 bytes), seen by
  // the library's constructors; "" leaves the name it inherits.
  std::string thread_name;
  int timeout_ms = 10000;  // for the load (the borrowed thread waits up to a second for a system call)
};

struct LoadResult {
  bool ok = false;
  std::string error;          // why not: the step that failed, and the process's dlerror()
  int64_t entry_result = 0;   // what the entry returned
  double stopped_ms = 0;      // how long a thread of the program was held (taken to given back)
  pid_t borrowed = 0;         // which thread
  bool ended = false;         // the process ended while the library was loading (how far it got is unknown)
};

// Borrows a thread of `pid` (its main thread first, then the others), maps
// a page of code and one of data there (left mapped: 8 KiB), starts a
// detached thread with pthread_create that loads the library with dlopen
// and calls the entry, gives the borrowed thread back, and waits for the new
// thread. glibc 2.34 or later (dlopen and pthread_create in libc.so.6).
LoadResult load_library(pid_t pid, const LoadRequest& request);

}  // namespace callscope::inject
