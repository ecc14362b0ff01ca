// The interned call stacks of value.h. A stack is keyed by its process and
// its frames as raw bytes, so that equal stacks share one id and an
// aggregation keyed by ustack() hashes two words, not the frames.
#include "query/value.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace callscope::query {

uint32_t Stacks::intern(uint32_t process, const uint64_t* frames, size_t n) {
  std::string bytes(sizeof process + n * sizeof(uint64_t), '\0');
  std::memcpy(bytes.data(), &process, sizeof process);
  if (n != 0) std::memcpy(bytes.data() + sizeof process, frames, n * sizeof(uint64_t));
  auto it = ids_.find(bytes);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back(Stack{process, std::vector<uint64_t>(frames, frames + n)});
  ids_.emplace(std::move(bytes), id);
  return id;
}

// dtrace prints an address it cannot name as 0x followed by lower-case hex.
std::string Stacks::fallback(uint64_t addr) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, addr);
  return buf;
}

}  // namespace callscope::query
