// The kernel's events of a thread in a trace (trace_format.h, kSysEvents):
// the block's columns, written and read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "format/trace_format.h"

namespace callscope::format {

struct SysEvent {
  SysKind kind = SysKind::kSwitchIn;
  uint64_t mono_ns = 0;  // CLOCK_MONOTONIC
  uint64_t arg = 0;  // a switch's CPU; a loss's count; a sleep state; a waker's tid; a system call's number;
                     // a fault's address
  int64_t value = 0;      // a system call's result; a waker's pid; a fault's flags (kFaultMajor, kFaultInKernel)
  uint64_t args[6] = {};  // a system call's arguments (kSyscallEnter); a fault's instruction (args[0])
  // kSample: arg the instruction, value the period (ns) * 2 + 1 if in the kernel.
  // kIoStart: arg the device, args[0] the sector, args[1] the bytes, value the kind (kIoWrite, ...);
  // kIoDone: arg the device, args[0] the sector, value the error (0: none).
};

// What a block request of kind `kind` (kIoWrite, kIoFlush, ...) does with
// data: writes it, reads it, or neither (a flush alone, a discard,
// another operation).
enum class IoData : uint8_t { kRead, kWrite, kNone };
inline IoData io_data(uint64_t kind) {
  if (kind & kIoWrite) return IoData::kWrite;
  return kind & (kIoFlush | kIoDiscard | kIoOther) ? IoData::kNone : IoData::kRead;
}

// The payload of a kSysEvents block for `events` (in time order); the
// block header's first_tick is the first event's time.
std::vector<uint8_t> encode_sys_events(const std::vector<SysEvent>& events);
// Appends the `count` events of a payload to `out`; an error when the
// columns do not add up or a kind is unknown.
Status decode_sys_events(const std::vector<uint8_t>& payload, uint32_t count, uint64_t first_ns,
                         std::vector<SysEvent>& out);

// The name of block device `dev` (the kernel's dev_t, as the block
// tracepoints give it: major << 20 | minor) on this machine, as
// /sys/dev/block says ("vda", "nvme0n1p2"); "" when it has none.
std::string block_device_name(uint32_t dev);

}  // namespace callscope::format
