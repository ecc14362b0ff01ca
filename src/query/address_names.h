// How a query names an address of a traced process -- ufunc(), umod(),
// usym() and ustack()'s frames: "module`function" (form 0 and 2), "module"
// (form 1) -- and which address stands for it as an aggregation key, as
// libdtrace keys them (value.h, Stacks::normalize): one per function, or
// per module. Both cached.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace callscope::symbolize {
class Symbolizer;
}

namespace callscope::query {

class AddressNames {
 public:
  explicit AddressNames(symbolize::Symbolizer& sym) : sym_(sym) {}
  // Names made terminal-safe (text output, the default) or left as they
  // are (JSON quotes them itself).
  void set_terminal_safe(bool on) { safe_ = on; }
  std::string symbol(uint32_t process, uint64_t addr, uint8_t form);
  // The first address met of the same function (forms 0 and 2) or module
  // (form 1); an address of no known function stays itself.
  uint64_t normalize(uint32_t process, uint64_t addr, uint8_t form);

 private:
  symbolize::Symbolizer& sym_;
  bool safe_ = true;
  std::map<std::tuple<uint32_t, uint64_t, uint8_t>, std::string> names_;  // (process, addr, form)
  // (process, addr, 0 function / 1 module) -> the address that stands for
  // it, and the first address met of each (process, kind, name).
  std::map<std::tuple<uint32_t, uint64_t, uint8_t>, uint64_t> keys_;
  std::map<std::tuple<uint32_t, uint8_t, std::string>, uint64_t> first_of_name_;
};

}  // namespace callscope::query
