// A fixed-size path builder for the runtime, which must not allocate. Its
// own buffer, not ctldir::Text over one: a PathBuf in a global (the session
// directory) is used from the runtime's init, which may run before C++
// dynamic initializers, so it must need none.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

namespace callscope::rt {

class PathBuf {
 public:
  CALLSCOPE_NOINSTR PathBuf& add(const char* s) {
    while (*s && n_ + 1 < sizeof buf_) buf_[n_++] = *s++;
    buf_[n_] = '\0';
    return *this;
  }
  CALLSCOPE_NOINSTR PathBuf& add_uint(uint64_t v) {
    char tmp[24];
    int i = 0;
    do {
      tmp[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (i > 0 && n_ + 1 < sizeof buf_) buf_[n_++] = tmp[--i];
    buf_[n_] = '\0';
    return *this;
  }
  CALLSCOPE_NOINSTR void clear() {
    n_ = 0;
    buf_[0] = '\0';
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return n_; }

 private:
  char buf_[4096] = {0};
  size_t n_ = 0;
};

}  // namespace callscope::rt
