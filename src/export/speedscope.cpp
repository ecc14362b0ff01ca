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
  // One profile per thread frame, or one for the merged tree.
  std::vector<std::pair<uint32_t, std::string>> tops;
  if (t.per_thread)
    for (uint32_t c : t.children[0]) tops.push_back({c, t.labels[c]});
  else
    tops.push_back({0, "all threads"});
  std::vector<int64_t> frame_of(p.functions.size(), -1);
  std::vector<size_t> frames;  // function indexes, in frame order
  bool first_profile = true;
  for (const auto& [top, name] : tops) {
    std::string samples, weights;
    uint64_t sum = 0;
    std::vector<uint32_t> path;
    std::vector<std::pair<uint32_t, size_t>> todo{{top, 0}};
    // Depth first below `top`, the path of function frames kept as we go.
    while (!todo.empty()) {
      auto& [node, next] = todo.back();
      if (next == t.children[node].size()) {
        todo.pop_back();
        if (!path.empty() && node != top) path.pop_back();
        continue;
      }
      const uint32_t c = t.children[node][next++];
      const StackNode& n = t.nodes[c];
      const size_t fn = static_cast<size_t>(n.function);
      if (frame_of[fn] < 0) {
        frame_of[fn] = static_cast<int64_t>(frames.size());
        frames.push_back(fn);
      }
      path.push_back(static_cast<uint32_t>(frame_of[fn]));
      const uint64_t w = ns_of(trace, n.own_ticks);
      if (w) {
        samples += samples.empty() ? "[" : ",[";
        for (size_t i = 0; i < path.size(); ++i) samples += (i ? "," : "") + std::to_string(path[i]);
        samples += "]";
        weights += (weights.empty() ? "" : ",") + std::to_string(w);
        sum += w;
      }
      todo.push_back({c, 0});
    }
    b += first_profile ? "\n" : ",\n";
    first_profile = false;
    b += "{\"type\":\"sampled\",\"name\":" + json_string(name) + ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":" +
         std::to_string(sum) + ",\"samples\":[" + samples + "],\"weights\":[" + weights + "]}";
  }
  b += "\n],\"shared\":{\"frames\":[";
  for (size_t i = 0; i < frames.size(); ++i) b += (i ? ",\n" : "\n") + frame_json(p.functions[frames[i]]);
  b += "\n]}}\n";
  if (std::fwrite(b.data(), 1, b.size(), out) != b.size()) return Error("cannot write the speedscope profile");
  return ok_status();
}

}  // namespace callscope::exporter
