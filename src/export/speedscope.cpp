// speedscope's file format (https://www.speedscope.app/file-format-schema.json):
// evented profiles for recordings, sampled ones for call trees.
#include <cmath>

#include "export/ns.h"
#include "export/timeline_exports.h"

namespace callscope::exporter {
namespace {

constexpr const char* kHead =
    "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"callscope\",";

std::string frame_json(const analysis::FunctionInfo& f) {
  std::string s = "{\"name\":" + json_string(f.name);
  if (!f.file.empty()) s += ",\"file\":" + json_string(f.file);
  if (f.line) s += ",\"line\":" + std::to_string(f.line);
  return s + "}";
}

class EventedSink final : public SliceSink {
 public:
  EventedSink(TimelineInput& in, FILE* out) : in_(in), out_(out) {}
  void begin_thread(uint32_t thread) override {
    thread_ = thread;
    started_ = false;
  }
  void begin(uint64_t tick, uint32_t fn) override {
    if (!started_) start(tick);
    stack_.push_back(fn);
    event('O', fn, tick);
  }
  void end(uint64_t tick) override {
    event('C', stack_.back(), tick);
    stack_.pop_back();
  }
  void instant(uint64_t, Instant, uint64_t) override {}
  void end_thread(uint64_t last) override {
    if (!started_) return;
    buf_ += "],\"startValue\":" + std::to_string(first_) + ",\"endValue\":" + std::to_string(ns_of(in_.trace, last)) + "}";
    flush();
  }
  void finish() {
    flush();
  }
  uint64_t bytes() const { return bytes_; }
  uint32_t profiles() const { return profiles_; }

  std::string buf_;

 private:
  void start(uint64_t tick) {
    started_ = true;
    buf_ += profiles_++ ? ",\n" : "\n";
    buf_ += "{\"type\":\"evented\",\"name\":" + json_string(thread_frame_label(in_.trace, thread_)) +
            ",\"unit\":\"nanoseconds\",\"events\":[";
    first_ = ns_of(in_.trace, tick);
    first_event_ = true;
  }
  void event(char type, uint32_t fn, uint64_t tick) {
    buf_ += first_event_ ? "\n" : ",\n";
    first_event_ = false;
    buf_ += "{\"type\":\"";
    buf_ += type;
    buf_ += "\",\"frame\":" + std::to_string(fn) + ",\"at\":" + std::to_string(ns_of(in_.trace, tick)) + "}";
    if (buf_.size() >= (1u << 20)) flush();
  }
  void flush() {
    std::fwrite(buf_.data(), 1, buf_.size(), out_);
    bytes_ += buf_.size();
    buf_.clear();
  }

  TimelineInput& in_;
  FILE* out_;
  uint32_t thread_ = 0;
  bool started_ = false, first_event_ = true;
  uint64_t first_ = 0, bytes_ = 0;
  uint32_t profiles_ = 0;
  std::vector<uint32_t> stack_;
};

}  // namespace

Result<ExportCounts> write_speedscope_evented(TimelineInput& in, FILE* out) {
  EventedSink sink(in, out);
  sink.buf_ = std::string(kHead) + "\"name\":" + json_string(in.trace.path()) + ",\"activeProfileIndex\":0,\"profiles\":[";
  CALLSCOPE_TRY(TimelineCounts counts, stream_timeline(in.trace, in.threads, in.functions, in.options, sink));
  sink.buf_ += "\n],\"shared\":{\"frames\":[";
  const auto& fns = in.functions.functions();
  for (size_t i = 0; i < fns.size(); ++i) sink.buf_ += (i ? ",\n" : "\n") + frame_json(fns[i]);
  sink.buf_ += "\n]}}\n";
  sink.finish();
  return ExportCounts{counts, sink.bytes()};
}

Status write_speedscope_sampled(const format::TraceReader& trace, const StackTree& t, FILE* out) {
  const analysis::Profile& p = *t.profile;
  std::string b = std::string(kHead) + "\"name\":" + json_string(trace.path()) + ",\"activeProfileIndex\":0,\"profiles\":[";
  // One profile per thread frame, or one for the merged tree; a sample per
  // call path with self time, its frames outermost first.
  struct Sampled {
    std::string name, samples, weights;
    uint64_t sum = 0;
  };
  std::vector<Sampled> profiles;
  std::vector<size_t> profile_of(t.nodes.size(), 0);  // per thread frame
  if (t.per_thread) {
    for (uint32_t c : t.children[0]) {
      profile_of[c] = profiles.size();
      profiles.push_back({t.labels[c], "", "", 0});
    }
  } else {
    profiles.push_back({"all threads", "", "", 0});
  }
  std::vector<int64_t> frame_of(p.functions.size(), -1);
  std::vector<size_t> frames;  // function indexes, in frame order
  walk_stacks(t, [&](uint32_t id, const std::vector<uint32_t>& path) {
    const StackNode& n = t.nodes[id];
    if (n.function < 0) return;  // a thread's frame
    const size_t fn = static_cast<size_t>(n.function);
    if (frame_of[fn] < 0) {
      frame_of[fn] = static_cast<int64_t>(frames.size());
      frames.push_back(fn);
    }
    const uint64_t w = ns_of(trace, n.own_ticks);
    if (!w) return;
    Sampled& s = profiles[t.per_thread ? profile_of[path.front()] : 0];
    s.samples += s.samples.empty() ? "[" : ",[";
    bool first = true;
    for (uint32_t node : path) {
      if (t.nodes[node].function < 0) continue;
      s.samples += (first ? "" : ",") + std::to_string(frame_of[static_cast<size_t>(t.nodes[node].function)]);
      first = false;
    }
    s.samples += "]";
    s.weights += (s.weights.empty() ? "" : ",") + std::to_string(w);
    s.sum += w;
  });
  for (size_t i = 0; i < profiles.size(); ++i) {
    const Sampled& s = profiles[i];
    b += i ? ",\n" : "\n";
    b += "{\"type\":\"sampled\",\"name\":" + json_string(s.name) + ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":" +
         std::to_string(s.sum) + ",\"samples\":[" + s.samples + "],\"weights\":[" + s.weights + "]}";
  }
  b += "\n],\"shared\":{\"frames\":[";
  for (size_t i = 0; i < frames.size(); ++i) b += (i ? ",\n" : "\n") + frame_json(p.functions[frames[i]]);
  b += "\n]}}\n";
  if (std::fwrite(b.data(), 1, b.size(), out) != b.size()) return Error("cannot write the speedscope profile");
  return ok_status();
}

}  // namespace callscope::exporter
