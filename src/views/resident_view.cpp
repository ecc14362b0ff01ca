// `callscope memory --resident` (resident_view.h).
#include "views/resident_view.h"

#include <map>
#include <nlohmann/json.hpp>

#include "format/resident.h"
#include "views/format_util.h"
#include "views/sparkline.h"

namespace callscope::views {

namespace fmt = callscope::format;
using Json = nlohmann::ordered_json;

Status print_resident(format::TraceReader& trace, const MemoryOptions& o, std::FILE* out) {
  auto ns = [&](uint64_t tick) { return trace.ticks_to_ns(tick); };
  auto when = [&](uint64_t tick) { return format_timestamp_ns(trace.ticks_to_ns(tick)); };
  const auto& all = trace.resident();
  // Per process: its samples (ticks in order), and per (module, kind) the
  // value in each.
  struct Row {
    std::string module, path;
    fmt::ResidentKind kind;
    std::vector<uint64_t> rss, pss;  // per sample (0: not mapped then)
  };
  struct Proc {
    std::vector<uint64_t> ticks;
    std::vector<uint8_t> reasons;
    std::vector<Row> rows;
    std::map<std::pair<std::string, uint8_t>, size_t> index;
  };
  std::map<uint32_t, Proc> procs;
  for (const auto& r : all) {
    Proc& p = procs[r.record.process_index];
    if (p.ticks.empty() || p.ticks.back() != r.record.tick || p.reasons.back() != r.record.reason) {
      p.ticks.push_back(r.record.tick);
      p.reasons.push_back(r.record.reason);
    }
    const size_t sample = p.ticks.size() - 1;
    auto [it, fresh] = p.index.try_emplace({r.path, r.record.kind}, p.rows.size());
    if (fresh) {
      Row row;
      row.path = r.path;
      row.module = r.path.empty() ? "[anon]" : r.path.substr(r.path.rfind('/') + 1);
      row.kind = static_cast<fmt::ResidentKind>(r.record.kind);
      p.rows.push_back(std::move(row));
    }
    Row& row = p.rows[it->second];
    row.rss.resize(sample + 1, 0);
    row.pss.resize(sample + 1, 0);
    row.rss[sample] += r.record.rss_kb;
    row.pss[sample] += r.record.pss_kb;
  }
  for (auto& [pi, p] : procs)
    for (Row& row : p.rows) {
      row.rss.resize(p.ticks.size(), 0);
      row.pss.resize(p.ticks.size(), 0);
    }
  auto pid_of = [&](uint32_t pi) { return trace.process(pi).record.pid; };
  if (o.format == OutputFormat::kCsv) {
    std::fprintf(out, "pid,ns,reason,module,kind,rss_kb,pss_kb,path\n");
    for (const auto& [pi, p] : procs)
      for (size_t s = 0; s < p.ticks.size(); ++s)
        for (const Row& row : p.rows)
          if (row.rss[s] || row.pss[s])
            std::fprintf(out, "%u,%.0f,%s,%s,%s,%llu,%llu,%s\n", pid_of(pi), ns(p.ticks[s]),
                         fmt::resident_reason_name(static_cast<fmt::ResidentReason>(p.reasons[s])),
                         csv_field(row.module).c_str(), fmt::resident_kind_name(row.kind),
                         static_cast<unsigned long long>(row.rss[s]), static_cast<unsigned long long>(row.pss[s]),
                         csv_field(row.path).c_str());
    return ok_status();
  }
  if (o.format == OutputFormat::kJson) {
    Json a = Json::array();
    for (const auto& [pi, p] : procs) {
      Json proc;
      proc["pid"] = pid_of(pi);
      Json samples = Json::array();
      for (size_t s = 0; s < p.ticks.size(); ++s) {
        Json sample;
        sample["ns"] = ns(p.ticks[s]);
        sample["reason"] = fmt::resident_reason_name(static_cast<fmt::ResidentReason>(p.reasons[s]));
        Json entries = Json::array();
        for (const Row& row : p.rows)
          if (row.rss[s] || row.pss[s])
            entries.push_back({{"module", row.module}, {"path", row.path}, {"kind", fmt::resident_kind_name(row.kind)},
                               {"rss_kb", row.rss[s]}, {"pss_kb", row.pss[s]}});
        sample["entries"] = entries;
        samples.push_back(sample);
      }
      proc["samples"] = samples;
      a.push_back(proc);
    }
    Json j;
    j["processes"] = a;
    std::fprintf(out, "%s\n", json_text(j).c_str());
    return ok_status();
  }
  if (procs.empty()) {
    std::fprintf(out, "no resident-set samples in this trace (recorded before callscope 0.1's trace 1.6?)\n");
    return ok_status();
  }
  auto kib = [](uint64_t kb) { return format_bytes(kb * 1024); };
  for (auto& [pi, p] : procs) {
    std::vector<uint64_t> total(p.ticks.size(), 0);
    for (const Row& row : p.rows)
      for (size_t s = 0; s < p.ticks.size(); ++s) total[s] += row.rss[s];
    std::map<uint8_t, int> reasons;  // in the order of a run: start, dlopen, interval, exit
    for (uint8_t r : p.reasons) ++reasons[r];
    std::string said;
    for (const auto& [r, n] : reasons)
      said += (said.empty() ? "" : ", ") + std::to_string(n) + " " +
              fmt::resident_reason_name(static_cast<fmt::ResidentReason>(r));
    std::fprintf(out, "%sprocess %u: %s from %s to %s (%s)\n", pi == procs.begin()->first ? "" : "\n", pid_of(pi),
                 count_of(p.ticks.size(), "resident-set sample", "resident-set samples").c_str(),
                 when(p.ticks.front()).c_str(), when(p.ticks.back()).c_str(), said.c_str());
    std::fprintf(out, "RSS in all: %s at the start, %s at the highest, %s at the end  %s\n\n",
                 kib(total.front()).c_str(), kib(peak_of(total)).c_str(), kib(total.back()).c_str(),
                 sparkline(total).c_str());
    std::stable_sort(p.rows.begin(), p.rows.end(),
                     [](const Row& a, const Row& b) { return peak_of(a.rss) > peak_of(b.rss); });
    TextTable table({"RSS START", "RSS PEAK", "RSS END", "PSS END", "KIND", "MODULE"}, 4);
    size_t shown = 0;
    size_t empty = 0;
    for (const Row& row : p.rows) {
      if (peak_of(row.rss) == 0 && peak_of(row.pss) == 0) {
        ++empty;  // mapped, never resident ([vvar], reserved space)
        continue;
      }
      if (o.limit && shown >= o.limit) break;
      ++shown;
      table.add({kib(row.rss.front()), kib(peak_of(row.rss)), kib(row.rss.back()), kib(row.pss.back()),
                 fmt::resident_kind_name(row.kind), row.module});
    }
    table.print(out);
    if (o.limit && p.rows.size() - empty > o.limit)
      std::fprintf(out, "(%zu more rows: -n 0 shows all)\n", p.rows.size() - empty - o.limit);
  }
  return ok_status();
}

}  // namespace callscope::views
