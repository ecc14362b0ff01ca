// What a pid$target description leaves out (other_processes.h).
#include "query/other_processes.h"

#include <algorithm>

#include "query/probes.h"

namespace callscope::query {
namespace {

// 1523 -> "1,523": counts read at a glance.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

void OtherProcesses::add(const ProbeSpec& spec) {
  // pid$target and fpid$target: the pid provider of one process.
  const std::string provider = spec.provider.rfind("fpid", 0) == 0 ? spec.provider.substr(1) : spec.provider;
  if (!spec.target || provider.rfind("pid", 0) != 0) return;
  if (twins_.empty()) target_ = provider;
  ProbeSpec twin = spec;
  twin.provider = "pid*";
  twins_.push_back(std::move(twin));
}

std::vector<uint32_t> OtherProcesses::match(Catalog& catalog) const {
  std::vector<uint32_t> ids;
  for (const ProbeSpec& twin : twins_) {
    auto m = catalog.match(twin);  // "pid*" names no offset: it cannot fail
    if (m) ids.insert(ids.end(), m->begin(), m->end());
  }
  return ids;
}

bool OtherProcesses::matches(const Catalog& catalog, uint32_t id) const {
  for (const ProbeSpec& twin : twins_)
    if (catalog.matches(twin, id)) return true;
  return false;
}

std::string OtherProcesses::note_of(const std::vector<std::pair<int64_t, uint64_t>>& by_pid) const {
  // A process and the image it exec'd are one pid: one process here.
  std::vector<std::pair<int64_t, uint64_t>> merged;
  for (const auto& [pid, n] : by_pid) {
    auto it = std::find_if(merged.begin(), merged.end(), [pid = pid](const auto& p) { return p.first == pid; });
    if (it == merged.end()) merged.emplace_back(pid, n);
    else it->second += n;
  }
  if (merged.empty()) return "";
  uint64_t events = 0;
  std::string pids;
  for (size_t i = 0; i < merged.size(); ++i) {
    events += merged[i].second;
    if (i < 3) pids += (i ? ", pid" : "pid") + std::to_string(merged[i].first);
  }
  if (merged.size() > 3) pids += ", ...";
  const std::string others =
      std::to_string(merged.size()) + (merged.size() == 1 ? " other process had " : " other processes had ");
  const std::string what = grouped(events) + (events == 1 ? " matching event" : " matching events");
  return "pid$target matched process " + target_.substr(3) + " only; " + others + what + ": use pid* (or " + pids +
         ") to see " + (events == 1 ? "it" : "them");
}

}  // namespace callscope::query
