// Small text helpers shared by the views: durations with a unit chosen per
// value, byte sizes, exit descriptions, address formatting, and names cut to
// a column's width.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/output_format.h"

#include "format/trace_format.h"
#include "format/trace_reader.h"

namespace callscope::views {

std::string format_duration_ns(double ns);   // "812 ns", "12.3 us", "4.56 ms", "1.230 s"
std::string format_timestamp_ns(double ns);  // "812 ns", "12.345 us": three decimals, for time columns
std::string format_bytes(uint64_t bytes);    // "812 B", "12.3 KiB", ...
std::string format_hex(uint64_t v);          // "0x401a20"
std::string describe_exit(format::ExitHow how, int code, int signal, bool core_dumped);
std::string signal_name(int signal);         // "SIGSEGV"
std::string format_realtime(uint64_t ns_since_epoch);  // "2026-11-20 23:40:01 UTC"
// A name cut to at most `width` characters, the last three "..." when cut
// (width 0: the whole name). Counts UTF-8 characters, never splits one.
// When events of the trace were lost: one line naming how many, in how many
// threads, and what that means for the figures; "" otherwise. Every command
// that reads events prints it ("callscope CMD: warning: ...").
std::string loss_warning(const format::TraceReader& trace);

std::string fit_name(const std::string& name, size_t width);

// A JSON document as text. Names come from traces and binaries and need not
// be UTF-8: such bytes become U+FFFD, where nlohmann::json would throw.
// (Text views use terminal_safe(), CSV csv_field().)
template <class Json>
std::string json_text(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace callscope::views
