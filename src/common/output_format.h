// The --format of every view: text for terminals, CSV for spreadsheets,
// JSON for programs.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace callscope {

enum class OutputFormat { kText, kCsv, kJson };
inline constexpr const char* kOutputFormatNames = "text, csv, json";
// An unknown name is an error that lists the valid ones.
Result<OutputFormat> parse_output_format(std::string_view name);

// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line
// break, as C++ names do ("f<a, b>").
std::string csv_field(const std::string& s);

}  // namespace callscope
