// File helpers for offline code, returning errors as values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace callscope {

// A regular file opened read-only; the caller closes fd.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;  // bytes, when it was opened
};

// Opens `path` for reading and refuses what is not a regular file -- a FIFO,
// a device, a socket, a directory -- with a message naming what it is. The
// open never waits (a FIFO without a writer would block it forever): every
// reader of traces, raw sessions, binaries and config files goes through
// here. `directory_hint` is added to the message for a directory.
Result<OpenedFile> open_regular_file(const std::string& path, std::string_view directory_hint = {});

// The last component of a path: "/usr/bin/app" -> "app".
inline std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path);
Status write_file_bytes(const std::string& path, const void* data, size_t size);

}  // namespace callscope
