// `callscope info`: what a trace holds, as text or JSON.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include <vector>

#include "analysis/balance.h"
#include "format/trace_reader.h"

namespace callscope::views {

// `balance`: one per thread of the trace (analysis::stream_balance); the
// threads where it does not hold are named.
void print_info_text(const format::TraceReader& trace, const std::vector<analysis::StreamBalance>& balance, FILE* out);
nlohmann::json info_json(const format::TraceReader& trace, const std::vector<analysis::StreamBalance>& balance);

}  // namespace callscope::views
