// A row of numbers as a text sparkline (memory's --timeline and --resident).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace callscope::views {

inline uint64_t peak_of(const std::vector<uint64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// One bar per value, scaled to the row's own peak; 0 is blank, anything
// above it shows at least the lowest bar.
inline std::string sparkline(const std::vector<uint64_t>& v) {
  static const char* const kBars[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  const uint64_t top = peak_of(v);
  std::string s;
  for (uint64_t x : v) {
    const size_t level = top == 0 || x == 0 ? 0 : 1 + static_cast<size_t>(static_cast<double>(x) * 7.0 / static_cast<double>(top));
    s += kBars[std::min<size_t>(level, 8)];
  }
  return s;
}

}  // namespace callscope::views
