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
    thread_ids_ = ",\"pid\":" + std::to_string(in_.trace.process(tr.record.process_index).record.pid) +
                  ",\"tid\":" + std::to_string(tid_of(in_.trace, thread)) + "}";
  }
  // A begin ("B") and an end ("E") per call, each time written once.
  // Complete ("X") events would give the end as ts + dur: readers add the
  // two in binary floating point (the decimals of microseconds are not exact
  // in it), so a callee that ends with its caller -- frames left by a
  // longjmp, an exception, lost events, the end of the stream -- could end
  // a fraction of an ulp after it, and a call could end after the next one
  // began: speedscope then dropped the frames ("Tried to end X when Y was on
  // top") and drew the thread wrong. A time written once reads as the same
  // double wherever it appears, and reading is monotonic, so the order of
  // the file is the order every reader sees.
  void begin(uint64_t tick, uint32_t fn) override {
    stack_.push_back(fn);
    std::string& b = out_.next();
    b += "{\"ph\":\"B\",\"name\":";
    b += name(fn);
    b += ",\"cat\":";
    b += category(fn);
    b += ",\"ts\":";
    put_us(b, ns_of(in_.trace, tick));
    b += thread_ids_;
    out_.maybe_flush();
  }
  // The end names its call again: speedscope matches an end to the open
  // begin by name, and refuses an end without one.
  void end(uint64_t tick) override {
    const uint32_t fn = stack_.back();
    stack_.pop_back();
    std::string& b = out_.next();
    b += "{\"ph\":\"E\",\"name\":";
    b += name(fn);
    b += ",\"ts\":";
    put_us(b, ns_of(in_.trace, tick));
    b += thread_ids_;
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
    if (what == Instant::kLost) b += ",\"args\":{\"events\":" + std::to_string(arg) + "}";
    if (what == Instant::kMark) b += ",\"args\":{\"id\":" + std::to_string(arg) + "}";
    b += thread_ids_;
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
  std::string thread_ids_;  // ,"pid":P,"tid":T} -- the end of every event of the thread
  std::vector<uint32_t> stack_;  // the functions of the open calls
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
