#include "common/glob.h"

#include <fnmatch.h>

#include <string>

namespace callscope {

bool glob_match(std::string_view pattern, std::string_view text) {
  std::string p(pattern), t(text);
  return ::fnmatch(p.c_str(), t.c_str(), 0) == 0;
}

bool glob_match_any(const std::vector<std::string>& patterns, std::string_view text) {
  for (const std::string& p : patterns)
    if (glob_match(p, text)) return true;
  return false;
}

std::string quoted_list(const std::vector<std::string>& patterns) {
  std::string out;
  for (const std::string& p : patterns) out += (out.empty() ? "'" : ", '") + p + "'";
  return out;
}

}  // namespace callscope
