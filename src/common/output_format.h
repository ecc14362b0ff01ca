// The --format of every view: text for terminals, CSV for spreadsheets,
// JSON for programs.
#pragma once

#include <string_view>

#include "common/result.h"

namespace callscope {

enum class OutputFormat { kText, kCsv, kJson };
inline constexpr const char* kOutputFormatNames = "text, csv, json";
// An unknown name is an error that lists the valid ones.
Result<OutputFormat> parse_output_format(std::string_view name);

}  // namespace callscope
