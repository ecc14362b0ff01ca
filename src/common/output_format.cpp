#include "common/output_format.h"

#include <string>

namespace callscope {

Result<OutputFormat> parse_output_format(std::string_view name) {
  if (name == "text") return OutputFormat::kText;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return Error("unknown format '" + std::string(name) + "' (valid formats: " + kOutputFormatNames + ")");
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace callscope
