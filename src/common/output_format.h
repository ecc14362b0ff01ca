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

// Text from a trace or a binary (thread names, command lines, paths, symbol
// and section names, marks), made safe to print on a terminal: control
// characters (C0, DEL, and C1 as UTF-8 U+0080..U+009F) and bytes that are not
// UTF-8 are written as C escapes (\t, \n, \r, else \xNN). Such a
// name cannot move the cursor, retitle or clear the terminal; valid UTF-8
// otherwise passes unchanged, and the result is unchanged by a second pass.
// CSV and JSON keep their own quoting instead.
std::string terminal_safe(std::string_view s);
// The same for a message of several lines (an error whose detail follows
// on indented lines, as dtrace's "identifier redeclared"): newlines and
// tabs are kept, every other control character escaped.
std::string terminal_safe_lines(std::string_view s);

// "callscope <command>: warning: <text>" on stderr. The text may quote a
// trace or a binary (module paths, names): printed terminal_safe, as main
// prints errors.
void print_warning(const char* command, const std::string& text);

}  // namespace callscope
