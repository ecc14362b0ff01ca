// File helpers for offline code, returning errors as values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace callscope {

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path);
Status write_file_bytes(const std::string& path, const void* data, size_t size);

}  // namespace callscope
