#include "format/sys_events.h"

#include <cstring>
#include <fstream>

#include "format/varint.h"

namespace callscope::format {

std::vector<uint8_t> encode_sys_events(const std::vector<SysEvent>& events) {
  std::vector<uint8_t> kinds, dt, arg;
  kinds.reserve(events.size());
  uint64_t prev = events.empty() ? 0 : events.front().mono_ns;
  for (const SysEvent& e : events) {
    kinds.push_back(static_cast<uint8_t>(e.kind));
    put_varint(dt, e.mono_ns >= prev ? e.mono_ns - prev : 0);
    prev = std::max(prev, e.mono_ns);
    put_varint(arg, e.arg);
    switch (e.kind) {
      case SysKind::kWakeup:
        put_varint(arg, static_cast<uint64_t>(e.value));
        break;
      case SysKind::kSyscallEnter:
        for (uint64_t a : e.args) put_varint(arg, a);
        break;
      case SysKind::kSyscallExit:
        put_varint(arg, zigzag(e.value));
        break;
      case SysKind::kPageFault:
        put_varint(arg, e.args[0]);
        put_varint(arg, static_cast<uint64_t>(e.value));
        break;
      case SysKind::kSample:
        put_varint(arg, static_cast<uint64_t>(e.value));
        break;
      case SysKind::kIoStart:
        put_varint(arg, e.args[0]);
        put_varint(arg, e.args[1]);
        put_varint(arg, static_cast<uint64_t>(e.value));
        break;
      case SysKind::kIoDone:
        put_varint(arg, e.args[0]);
        put_varint(arg, zigzag(e.value));
        break;
      default:
        break;
    }
  }
  SysColumnsHeader h{static_cast<uint32_t>(events.size()), static_cast<uint32_t>(kinds.size()),
                     static_cast<uint32_t>(dt.size()), static_cast<uint32_t>(arg.size())};
  std::vector<uint8_t> out(sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  out.insert(out.end(), kinds.begin(), kinds.end());
  out.insert(out.end(), dt.begin(), dt.end());
  out.insert(out.end(), arg.begin(), arg.end());
  return out;
}

Status decode_sys_events(const std::vector<uint8_t>& payload, uint32_t count, uint64_t first_ns,
                         std::vector<SysEvent>& out) {
  SysColumnsHeader h{};
  if (payload.size() < sizeof h) return Error("system events: payload shorter than its header");
  std::memcpy(&h, payload.data(), sizeof h);
  const uint64_t need = uint64_t{sizeof h} + h.kinds_bytes + h.dt_bytes + h.arg_bytes;
  if (h.n_events != count || h.kinds_bytes != h.n_events || need != payload.size())
    return Error("system events: columns do not add up (" + std::to_string(h.n_events) + " events, block says " +
                 std::to_string(count) + ")");
  const uint8_t* kinds = payload.data() + sizeof h;
  const uint8_t* dt = kinds + h.kinds_bytes;
  const uint8_t* dt_end = dt + h.dt_bytes;
  const uint8_t* arg = dt_end;
  const uint8_t* arg_end = arg + h.arg_bytes;
  uint64_t t = first_ns;
  out.reserve(out.size() + h.n_events);
  for (uint32_t i = 0; i < h.n_events; ++i) {
    if (kinds[i] == 0 || kinds[i] > kSysKindMax)
      return Error("system events: unknown kind " + std::to_string(kinds[i]) + " at event " + std::to_string(i));
    SysEvent e;
    e.kind = static_cast<SysKind>(kinds[i]);
    uint64_t d = 0, v = 0;
    bool ok = get_varint(dt, dt_end, d) && get_varint(arg, arg_end, e.arg);
    switch (e.kind) {
      case SysKind::kWakeup:
        ok = ok && get_varint(arg, arg_end, v);
        e.value = static_cast<int64_t>(v);
        break;
      case SysKind::kSyscallEnter:
        for (uint64_t& a : e.args) ok = ok && get_varint(arg, arg_end, a);
        break;
      case SysKind::kSyscallExit:
        ok = ok && get_varint(arg, arg_end, v);
        e.value = unzigzag(v);
        break;
      case SysKind::kPageFault:
        ok = ok && get_varint(arg, arg_end, e.args[0]) && get_varint(arg, arg_end, v);
        e.value = static_cast<int64_t>(v);
        break;
      case SysKind::kSample:
        ok = ok && get_varint(arg, arg_end, v);
        e.value = static_cast<int64_t>(v);
        break;
      case SysKind::kIoStart:
        ok = ok && get_varint(arg, arg_end, e.args[0]) && get_varint(arg, arg_end, e.args[1]) &&
             get_varint(arg, arg_end, v);
        e.value = static_cast<int64_t>(v);
        break;
      case SysKind::kIoDone:
        ok = ok && get_varint(arg, arg_end, e.args[0]) && get_varint(arg, arg_end, v);
        e.value = unzigzag(v);
        break;
      default:
        break;
    }
    if (!ok) return Error("system events: a column ends before event " + std::to_string(i));
    t += d;
    e.mono_ns = t;
    out.push_back(e);
  }
  if (dt != dt_end || arg != arg_end) return Error("system events: bytes left over after the last event");
  return ok_status();
}

std::string block_device_name(uint32_t dev) {
  const std::string id = std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xfffff);
  std::ifstream f("/sys/dev/block/" + id + "/uevent");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
  return "";
}

}  // namespace callscope::format
