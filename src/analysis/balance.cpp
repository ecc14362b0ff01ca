// Reading a thread's balance (balance.h).
#include "analysis/balance.h"

namespace callscope::analysis {

Result<StreamBalance> stream_balance(format::TraceReader& trace, uint32_t thread) {
  StreamBalance b;
  CALLSCOPE_CHECK(trace.for_each_event_batch(thread, [&](const format::TraceEvent* batch, size_t n) {
    for (size_t i = 0; i < n; ++i) b.add(batch[i]);
    return true;
  }));
  return b;
}

}  // namespace callscope::analysis
