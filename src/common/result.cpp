#include "common/result.h"

#include <cstring>

namespace callscope {

Error system_error(const std::string& what, int errnum) {
  return Error(what + ": " + std::strerror(errnum));
}

}  // namespace callscope
