// `callscope info`: what a trace holds, as text or JSON.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include "format/trace_reader.h"

namespace callscope::views {

void print_info_text(const format::TraceReader& trace, FILE* out);
nlohmann::json info_json(const format::TraceReader& trace);

}  // namespace callscope::views
