#include "common/glob.h"

#include <fnmatch.h>

#include <string>

namespace callscope {

bool glob_match(std::string_view pattern, std::string_view text) {
  std::string p(pattern), t(text);
  return ::fnmatch(p.c_str(), t.c_str(), 0) == 0;
}

}  // namespace callscope
