// `callscope info`: what a trace holds, as text or JSON.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include <vector>

#include "analysis/balance.h"
#include "analysis/thread_states.h"
#include "format/trace_reader.h"

namespace callscope::views {

// `balance`: one per thread of the trace (analysis::stream_balance); the
// threads where it does not hold are named. `states`: one per thread
// (analysis::thread_states), or none: the kernel's context switches and
// each thread's time running, runnable and blocked, where the trace has them.
void print_info_text(const format::TraceReader& trace, const std::vector<analysis::StreamBalance>& balance, FILE* out,
                     const std::vector<analysis::ThreadStates>& states = {});
nlohmann::json info_json(const format::TraceReader& trace, const std::vector<analysis::StreamBalance>& balance,
                         const std::vector<analysis::ThreadStates>& states = {});

}  // namespace callscope::views
