// Shell-style globs ('*', '?', '[...]') for function and module names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace callscope {

// True when `text` matches `pattern` as a whole (fnmatch without FNM_PATHNAME,
// so '*' also matches ':' and '/': "ns::*" matches "ns::a::b").
bool glob_match(std::string_view pattern, std::string_view text);
// True when `text` matches one of `patterns` (repeated options such as
// `report -F a -F b`); false when there are none.
bool glob_match_any(const std::vector<std::string>& patterns, std::string_view text);
// "'a', 'b'": the patterns for a message.
std::string quoted_list(const std::vector<std::string>& patterns);

}  // namespace callscope
