// Shell-style globs ('*', '?', '[...]') for function and module names.
#pragma once

#include <string_view>

namespace callscope {

// True when `text` matches `pattern` as a whole (fnmatch without FNM_PATHNAME,
// so '*' also matches ':' and '/': "ns::*" matches "ns::a::b").
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace callscope
