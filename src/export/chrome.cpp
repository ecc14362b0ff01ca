// Chrome's trace-event JSON ("JSON Object Format" of the Trace Event Format
// document), read by chrome://tracing, Perfetto's UI and speedscope.
#include <cinttypes>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "export/ns.h"
#include "export/timeline_exports.h"

namespace callscope::exporter {

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Buffered output: one fwrite per MiB.
class Out {
 public:
  explicit Out(FILE* f) : f_(f) {}
  ~Out() { flush(); }
  std::string& buf() { return buf_; }
  // Starts an element of the event array: a comma before all but the first.
  std::string& next() {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
    return buf_;
  }
  void maybe_flush() {
    if (buf_.size() >= (1u << 20)) flush();
  }
  void flush() {
    if (!buf_.empty()) std::fwrite(buf_.data(), 1, buf_.size(), f_);
    bytes_ += buf_.size();
    buf_.clear();
  }
  uint64_t bytes() const { return bytes_ + buf_.size(); }

 private:
  FILE* f_;
  std::string buf_;
  uint64_t bytes_ = 0;
  bool first_ = true;
};

// A thread's tid; of a damaged trace that lost its thread records (all 0),
// the thread's # instead, so that threads keep tracks of their own.
uint32_t tid_of(const format::TraceReader& t, uint32_t thread) {
  const uint32_t tid = t.threads()[thread].record.tid;
  return tid != 0 ? tid : thread;
}

// Microseconds with three decimals.
void put_us(std::string& b, uint64_t ns) {
  char tmp[32];
  const int n = std::snprintf(tmp, sizeof tmp, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  b.append(tmp, static_cast<size_t>(n));
}

class ChromeSink final : public SliceSink {
 public:
  ChromeSink(TimelineInput& in, Out& out) : in_(in), out_(out) {}
  void begin_thread(uint32_t thread) override {
    const auto& tr = in_.trace.threads()[thread];
    pid_ = std::to_string(in_.trace.process(tr.record.process_index).record.pid);
    tid_ = std::to_string(tid_of(in_.trace, thread));
  }
  void begin(uint64_t tick, uint32_t fn) override { stack_.push_back({tick, fn}); }
  void end(uint64_t tick) override {
    const auto [start, fn] = stack_.back();
    stack_.pop_back();
    std::string& b = out_.next();
    b += "{\"ph\":\"X\",\"name\":";
    b += name(fn);
    b += ",\"cat\":";
    b += category(fn);
    // The end rounded as the start is, so that a callee never ends after
    // its caller.
    const uint64_t from = ns_of(in_.trace, start);
    b += ",\"ts\":";
    put_us(b, from);
    b += ",\"dur\":";
    put_us(b, ns_of(in_.trace, tick) - from);
    b += ",\"pid\":" + pid_ + ",\"tid\":" + tid_ + "}";
    out_.maybe_flush();
  }
  void instant(uint64_t tick, Instant what, uint64_t arg) override {
    std::string& b = out_.next();
    const char* label = what == Instant::kLost ? "[lost events]" : what == Instant::kPause ? "[recording stopped]"
                        : what == Instant::kResume ? "[recording goes on]" : "[mark]";
    b += "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"";
    b += label;
    b += "\",\"cat\":\"callscope\",\"ts\":";
    put_us(b, ns_of(in_.trace, tick));
    b += ",\"pid\":" + pid_ + ",\"tid\":" + tid_;
    if (what == Instant::kLost) b += ",\"args\":{\"events\":" + std::to_string(arg) + "}";
    if (what == Instant::kMark) b += ",\"args\":{\"id\":" + std::to_string(arg) + "}";
    b += "}";
    out_.maybe_flush();
  }
  void end_thread(uint64_t) override {}

 private:
  const std::string& name(uint32_t fn) {
    if (fn >= names_.size()) {
      names_.resize(fn + 1);
      cats_.resize(fn + 1);
    }
    if (names_[fn].empty()) {
      const analysis::FunctionInfo& f = in_.functions.functions()[fn];
      names_[fn] = json_string(f.name);
      cats_[fn] = json_string(f.module.empty() ? "?" : f.module);
    }
    return names_[fn];
  }
  const std::string& category(uint32_t fn) { return cats_[fn]; }

  TimelineInput& in_;
  Out& out_;
  std::string pid_, tid_;
  std::vector<std::pair<uint64_t, uint32_t>> stack_;
  std::vector<std::string> names_, cats_;
};

}  // namespace

Result<ExportCounts> write_chrome(TimelineInput& in, FILE* f) {
  Out out(f);
  std::string& b = out.buf();
  b += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"callscope\",\"trace\":" + json_string(in.trace.path()) +
       "},\n\"traceEvents\":[";
  // Names of the processes and threads first.
  std::set<uint32_t> named;
  for (uint32_t ti : in.threads) {
    const auto& tr = in.trace.threads()[ti];
    const auto& pr = in.trace.process(tr.record.process_index);
    const std::string pid = std::to_string(pr.record.pid);
    if (named.insert(tr.record.process_index).second) {
      out.next() += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":" +
                    json_string(base_name(pr.exe)) + "}}";
    }
    const std::string label = tr.name.empty() ? "thread " + std::to_string(ti) : tr.name + " (" + std::to_string(ti) + ")";
    out.next() += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" + std::to_string(tid_of(in.trace, ti)) +
         ",\"args\":{\"name\":" + json_string(label) + "}}";
  }
  ChromeSink sink(in, out);
  CALLSCOPE_TRY(TimelineCounts counts, stream_timeline(in.trace, in.threads, in.functions, in.options, sink));
  b += "\n]}\n";
  out.flush();
  return ExportCounts{counts, out.bytes()};
}

}  // namespace callscope::exporter
