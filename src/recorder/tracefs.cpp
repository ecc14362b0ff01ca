#include "recorder/tracefs.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace callscope::recorder {

int64_t Tracepoint::value(const uint8_t* raw, size_t size, Field f) {
  if (f.offset + f.size > size) return 0;
  switch (f.size) {
    case 1: return static_cast<int8_t>(raw[f.offset]);
    case 2: { int16_t v; std::memcpy(&v, raw + f.offset, 2); return v; }
    case 4: { int32_t v; std::memcpy(&v, raw + f.offset, 4); return v; }
    case 8: { int64_t v; std::memcpy(&v, raw + f.offset, 8); return v; }
    default: return 0;
  }
}

Result<Tracepoint> parse_tracepoint_format(const std::string& text) {
  Tracepoint t;
  std::istringstream in(text);
  std::string line;
  bool have_id = false;
  while (std::getline(in, line)) {
    if (line.rfind("ID:", 0) == 0) {
      t.id = std::strtoull(line.c_str() + 3, nullptr, 10);
      have_id = true;
      continue;
    }
    // "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;"
    const size_t f = line.find("field:");
    const size_t o = line.find("offset:");
    const size_t s = line.find("size:");
    if (f == std::string::npos || o == std::string::npos || s == std::string::npos) continue;
    std::string decl = line.substr(f + 6, line.find(';', f) - f - 6);
    const size_t bracket = decl.find('[');
    if (bracket != std::string::npos) decl.resize(bracket);
    const size_t space = decl.find_last_of(" *");
    const std::string name = space == std::string::npos ? decl : decl.substr(space + 1);
    Tracepoint::Field fd;
    fd.offset = static_cast<uint32_t>(std::strtoul(line.c_str() + o + 7, nullptr, 10));
    fd.size = static_cast<uint32_t>(std::strtoul(line.c_str() + s + 5, nullptr, 10));
    if (!name.empty()) t.fields[name] = fd;
  }
  if (!have_id) return Error("the tracepoint's format has no ID line");
  return t;
}

Result<std::string> tracefs_dir() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    const std::string events = std::string(dir) + "/events";
    const bool there = ::access(events.c_str(), F_OK) == 0;
    if ((there && ::access(events.c_str(), R_OK | X_OK) != 0) || (!there && errno == EACCES))
      return Error(std::string(dir) + " cannot be read (it is root's alone by default): run as root, or " +
                   "'mount -o remount,mode=755 " + dir + "' and give callscope CAP_PERFMON " +
                   "(setcap cap_perfmon+ep)");
    if (there) return std::string(dir);
  }
  return Error("tracefs is not mounted: 'mount -t tracefs nodev /sys/kernel/tracing' (as root)");
}

Result<Tracepoint> read_tracepoint(const std::string& system, const std::string& name) {
  auto dir = tracefs_dir();
  if (!dir) return dir.error();
  const std::string path = *dir + "/events/" + system + "/" + name + "/format";
  std::ifstream f(path);
  if (!f)
    return Error("this kernel has no tracepoint " + system + ":" + name + " (" + path + ": " +
                 std::strerror(errno) + ")");
  std::stringstream text;
  text << f.rdbuf();
  auto t = parse_tracepoint_format(text.str());
  if (!t) return Error(path + ": " + t.error().message());
  return t;
}

}  // namespace callscope::recorder
