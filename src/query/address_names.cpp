// Names and aggregation keys of addresses (address_names.h).
#include "query/address_names.h"

#include <cstdio>

#include "common/output_format.h"
#include "symbolize/symbolizer.h"

namespace callscope::query {

std::string AddressNames::symbol(uint32_t process, uint64_t addr, uint8_t form) {
  auto [it, fresh] = names_.try_emplace({process, addr, form});
  if (!fresh) return it->second;
  const symbolize::Symbol& s = sym_.lookup(process, addr);
  if (form == 1) {
    it->second = s.module.empty() ? "?" : s.module;
  } else if (s.function.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
    it->second = s.module.empty() ? std::string(buf) : s.module + "`" + buf;
  } else {
    it->second = s.module + "`" + s.function;
  }
  if (safe_) it->second = terminal_safe(it->second);
  return it->second;
}

uint64_t AddressNames::normalize(uint32_t process, uint64_t addr, uint8_t form) {
  const uint8_t kind = form == 1 ? 1 : 0;
  auto [it, fresh] = keys_.try_emplace({process, addr, kind}, addr);
  if (!fresh) return it->second;
  const symbolize::Symbol& s = sym_.lookup(process, addr);
  if (kind == 0 ? s.function.empty() : s.module.empty()) return addr;
  const std::string name = kind == 0 ? s.module + "`" + s.function : s.module;
  it->second = first_of_name_.try_emplace({process, kind, name}, addr).first->second;
  return it->second;
}

}  // namespace callscope::query
