// The resident set by module (resident.h).
#include "format/resident.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <map>

namespace callscope::format {

const char* resident_kind_name(ResidentKind k) {
  switch (k) {
    case ResidentKind::kCode: return "code";
    case ResidentKind::kData: return "data";
    case ResidentKind::kAnon: return "anon";
    case ResidentKind::kHeap: return "heap";
    case ResidentKind::kStack: return "stack";
    case ResidentKind::kOther: return "other";
  }
  return "other";
}

const char* resident_reason_name(ResidentReason r) {
  switch (r) {
    case ResidentReason::kStart: return "start";
    case ResidentReason::kDlopen: return "dlopen";
    case ResidentReason::kInterval: return "interval";
    case ResidentReason::kExit: return "exit";
  }
  return "interval";
}

bool parse_resident_reason(std::string_view name, ResidentReason& out) {
  for (ResidentReason r : {ResidentReason::kStart, ResidentReason::kDlopen, ResidentReason::kInterval,
                           ResidentReason::kExit})
    if (name == resident_reason_name(r)) {
      out = r;
      return true;
    }
  return false;
}

namespace {

bool parse_kind(std::string_view name, ResidentKind& out) {
  for (ResidentKind k : {ResidentKind::kCode, ResidentKind::kData, ResidentKind::kAnon, ResidentKind::kHeap,
                         ResidentKind::kStack, ResidentKind::kOther})
    if (name == resident_kind_name(k)) {
      out = k;
      return true;
    }
  return false;
}

std::string_view next_line(std::string_view& text) {
  const size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  return line;
}

// "Rss:   20 kB" -> 20.
bool field_kb(std::string_view line, std::string_view name, uint64_t& out) {
  if (line.substr(0, name.size()) != name) return false;
  uint64_t v = 0;
  for (char c : line.substr(name.size()))
    if (c >= '0' && c <= '9') v = v * 10 + static_cast<uint64_t>(c - '0');
  out = v;
  return true;
}

}  // namespace

std::vector<ResidentEntry> parse_smaps(std::string_view text) {
  std::vector<ResidentEntry> out;
  std::map<std::pair<std::string, ResidentKind>, size_t> index;
  ResidentEntry* cur = nullptr;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    if (line.empty()) continue;
    // A mapping's header: "low-high perms offset dev inode [path]"; its
    // first field holds a '-' between hex digits, no ':'.
    const size_t sp = line.find(' ');
    const std::string_view first = line.substr(0, sp);
    if (first.find('-') != std::string_view::npos && first.find(':') == std::string_view::npos) {
      std::string_view rest = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
      const std::string_view perms = rest.substr(0, rest.find(' '));
      // Skip offset, dev, inode: the path starts after the fifth field.
      size_t fields = 0, i = 0;
      while (i < rest.size() && fields < 4) {
        while (i < rest.size() && rest[i] != ' ') ++i;
        while (i < rest.size() && rest[i] == ' ') ++i;
        ++fields;
      }
      std::string path(i < rest.size() ? rest.substr(i) : std::string_view());
      if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) path.resize(path.size() - 10);
      ResidentKind kind;
      if (path.empty()) kind = ResidentKind::kAnon;
      else if (path == "[heap]") kind = ResidentKind::kHeap;
      else if (path == "[stack]") kind = ResidentKind::kStack;
      else if (path[0] == '[') kind = ResidentKind::kOther;
      else if (path[0] != '/') kind = ResidentKind::kOther;  // "anon_inode:...", "/memfd:" starts with '/'
      else kind = perms.size() > 2 && perms[2] == 'x' ? ResidentKind::kCode : ResidentKind::kData;
      if (kind == ResidentKind::kAnon || kind == ResidentKind::kOther) path = kind == ResidentKind::kAnon ? "" : path;
      auto [it, fresh] = index.try_emplace({path, kind}, out.size());
      if (fresh) out.push_back({kind, 0, 0, path});
      cur = &out[it->second];
      continue;
    }
    if (!cur) continue;
    uint64_t v = 0;
    if (field_kb(line, "Rss:", v)) cur->rss_kb += v;
    else if (field_kb(line, "Pss:", v)) cur->pss_kb += v;
  }
  return out;
}

std::string format_resident_sample(const ResidentSample& s) {
  std::string out = "sample " + std::to_string(s.mono_ns) + " " + resident_reason_name(s.reason) + "\n";
  for (const ResidentEntry& e : s.entries) {
    out += resident_kind_name(e.kind);
    out += " " + std::to_string(e.rss_kb) + " " + std::to_string(e.pss_kb) + " ";
    // A path with a newline could not be read back: such bytes become '?'.
    for (char c : e.path) out += c == '\n' ? '?' : c;
    out += "\n";
  }
  return out;
}

std::vector<ResidentSample> parse_resident_samples(std::string_view text) {
  std::vector<ResidentSample> out;
  while (!text.empty()) {
    const bool whole = text.find('\n') != std::string_view::npos;
    const std::string_view line = next_line(text);
    if (!whole) break;  // cut short
    if (line.substr(0, 7) == "sample ") {
      std::string_view rest = line.substr(7);
      const size_t sp = rest.find(' ');
      if (sp == std::string_view::npos) break;
      ResidentSample s;
      for (char c : rest.substr(0, sp)) {
        if (c < '0' || c > '9') return out;
        s.mono_ns = s.mono_ns * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!parse_resident_reason(rest.substr(sp + 1), s.reason)) return out;
      out.push_back(std::move(s));
      continue;
    }
    if (out.empty()) break;
    // KIND RSS PSS PATH (the path may hold spaces, or be empty).
    ResidentEntry e;
    std::string_view rest = line;
    std::string_view parts[3];
    for (auto& p : parts) {
      const size_t sp = rest.find(' ');
      if (sp == std::string_view::npos) return out;
      p = rest.substr(0, sp);
      rest = rest.substr(sp + 1);
    }
    if (!parse_kind(parts[0], e.kind)) return out;
    for (int f = 1; f <= 2; ++f)
      for (char c : parts[f]) {
        if (c < '0' || c > '9') return out;
        (f == 1 ? e.rss_kb : e.pss_kb) = (f == 1 ? e.rss_kb : e.pss_kb) * 10 + static_cast<uint64_t>(c - '0');
      }
    e.path = std::string(rest);
    out.back().entries.push_back(std::move(e));
  }
  return out;
}

namespace {

// A file read to its end (files of /proc say no size).
bool read_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace

Result<std::vector<ResidentEntry>> read_smaps(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/smaps";
  std::string text;
  if (!read_file(path, text)) return Error("cannot read " + path + ": " + std::strerror(errno));
  return parse_smaps(text);
}

std::vector<ResidentSample> read_process_samples(const std::string& dir) {
  std::string text;
  std::vector<ResidentSample> out;
  if (read_file(dir + "/resident.txt", text)) out = parse_resident_samples(text);
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      // smaps.<mono_ns>.<reason>
      const std::string_view name(e->d_name);
      if (name.substr(0, 6) != "smaps.") continue;
      const std::string_view rest = name.substr(6);
      const size_t dot = rest.find('.');
      if (dot == std::string_view::npos || dot == 0) continue;
      ResidentSample s;
      bool digits = true;
      for (char c : rest.substr(0, dot)) {
        if (c < '0' || c > '9') digits = false;
        else s.mono_ns = s.mono_ns * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!digits || !parse_resident_reason(rest.substr(dot + 1), s.reason)) continue;
      std::string smaps;
      if (!read_file(dir + "/" + std::string(name), smaps)) continue;
      s.entries = parse_smaps(smaps);
      if (!s.entries.empty()) out.push_back(std::move(s));
    }
    ::closedir(d);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ResidentSample& a, const ResidentSample& b) { return a.mono_ns < b.mono_ns; });
  return out;
}

bool append_resident_sample(const std::string& dir, int pid, ResidentReason reason, uint64_t mono_ns) {
  auto entries = read_smaps(pid);
  if (!entries || entries->empty()) return false;
  ResidentSample s;
  s.mono_ns = mono_ns;
  s.reason = reason;
  s.entries = std::move(*entries);
  const std::string text = format_resident_sample(s);
  const int fd = ::open((dir + "/resident.txt").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // One write: a sample is whole or (the recorder killed) cut short at its end.
  const ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  return n == static_cast<ssize_t>(text.size());
}

}  // namespace callscope::format
