# Generates the system calls' names (analysis/syscall_names.cpp) from the
# kernel's headers of this machine (linux-libc-dev, which libc6-dev pulls
# in): "#define __NR_read 0" lines. Arguments: IN (the header, or empty:
# no names, numbers are shown), OUT.
set(entries "")
if(IN AND EXISTS "${IN}")
  file(STRINGS "${IN}" lines REGEX "^#define __NR_[a-z0-9_]+[ \t]+[0-9]+")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "__NR_([a-z0-9_]+)[ \t]+([0-9]+)" _ "${line}")
    string(APPEND entries "    {${CMAKE_MATCH_2}, \"${CMAKE_MATCH_1}\"},\n")
  endforeach()
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/syscall_names.cmake.
#include <utility>
namespace callscope::analysis {
extern const std::pair<int, const char*> kSyscallNames[];
extern const unsigned kSyscallNameCount;
const std::pair<int, const char*> kSyscallNames[] = {
${entries}    {-1, nullptr},
};
const unsigned kSyscallNameCount = sizeof kSyscallNames / sizeof kSyscallNames[0] - 1;
}  // namespace callscope::analysis
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
