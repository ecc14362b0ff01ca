#include "common/output_format.h"

#include <string>

namespace callscope {

Result<OutputFormat> parse_output_format(std::string_view name) {
  if (name == "text") return OutputFormat::kText;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return Error("unknown format '" + std::string(name) + "' (valid formats: " + kOutputFormatNames + ")");
}

}  // namespace callscope
