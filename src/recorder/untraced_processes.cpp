// The processes a recording left untraced (untraced_processes.h).
#include "recorder/untraced_processes.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "common/output_format.h"

namespace callscope::recorder {

UntracedProcesses read_untraced_processes(const std::string& session) {
  UntracedProcesses out;
  std::ifstream in(session + "/untraced-processes");
  std::vector<std::pair<std::string, std::string>> lines;  // (pid, name); name "" once taken back
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) continue;
    const std::string pid = line.substr(0, space), name = line.substr(space + 1);
    if (name == "-") {
      for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (it->first == pid && !it->second.empty()) {
          it->second.clear();
          break;
        }
      continue;
    }
    lines.emplace_back(pid, name.empty() ? "?" : name);
  }
  std::map<std::string, uint64_t> by_name;
  for (const auto& [pid, name] : lines)
    if (!name.empty()) {
      ++out.count;
      ++by_name[name];
    }
  out.names.assign(by_name.begin(), by_name.end());
  std::stable_sort(out.names.begin(), out.names.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

void say_untraced_processes(const char* who, const std::string& session, const std::string& follow) {
  const UntracedProcesses u = read_untraced_processes(session);
  if (u.count == 0) return;
  std::string names;
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < u.names.size() && i < kShown; ++i)
    names += (i ? ", " : "") + terminal_safe(u.names[i].first) + " " + std::to_string(u.names[i].second);
  if (u.names.size() > kShown) names += ", ...";
  const char* plural = u.count == 1 ? "process" : "processes";
  const char* were = u.count == 1 ? "was" : "were";
  if (follow == "none")
    std::fprintf(stderr, "callscope %s: %llu %s the program started %s not traced (--follow none): %s\n", who,
                 static_cast<unsigned long long>(u.count), plural, were, names.c_str());
  else if (follow.empty())
    std::fprintf(stderr, "callscope %s: %llu %s %s not traced (--follow): %s\n", who,
                 static_cast<unsigned long long>(u.count), plural, were, names.c_str());
  else
    std::fprintf(stderr,
                 "callscope %s: %llu %s without hooks %s not traced (%s); --follow all traces every process\n",
                 who, static_cast<unsigned long long>(u.count), plural, were, names.c_str());
}

std::string follow_setting(const std::vector<std::pair<std::string, std::string>>& runtime_env) {
  for (const auto& [name, value] : runtime_env)
    if (name == "CALLSCOPE_FOLLOW") return value;
  return "hooked";
}

}  // namespace callscope::recorder
