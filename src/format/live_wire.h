// A recording's tap over a socket: how `query -p PID` receives the events
// of a program that `callscope record` is recording (cli/query_server.h).
//
// The query connects to the recorder's socket in the session directory and
// sends a hello line; the recorder answers with a line, then sends each
// LiveDelivery as one message:
//
//   query:    "callscope-query 1 <ticks per ns>\n"
//   recorder: "ok <clock 0|1> <origin> <now tick>\n"  or  "error <message>\n"
//   recorder: messages, each "CSQD" + u64 payload bytes + payload:
//     u64 horizon, u8 last,
//     u32 threads, each: u32 index, str process, u32 tid, u64 start tick, u8 main
//     u32 batches, each: u32 thread index, u32 n, u32 values,
//                        n kinds (u8), n ticks (u64), values (u64)
//     u32 ended, each: u32 index, u64 end tick
//     u32 warnings, each: str
//   (str: u32 bytes + bytes; integers little-endian, as the machine's)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "format/live_stream.h"

namespace callscope::format {

inline constexpr char kWireMagic[4] = {'C', 'S', 'Q', 'D'};
inline constexpr size_t kWireHeaderBytes = 12;  // magic + u64 payload bytes
// A delivery is a few milliseconds of events; more than this is damage.
inline constexpr uint64_t kWireMaxPayload = uint64_t{1} << 30;
// Thread indexes past this are damage too (a trace lists fewer threads).
inline constexpr uint32_t kWireMaxThread = uint32_t{1} << 24;

// Appends d's message (header and payload) to out.
void encode_delivery(const LiveDelivery& d, std::string& out);
// The payload's size from a message's first kWireHeaderBytes, or an error
// (not a message).
Result<uint64_t> wire_payload_bytes(std::string_view header);
// A delivery from a message's payload, or what is wrong with it; its
// columns come from `pool` (LiveTap::reuse) when it has some.
Result<LiveDelivery> decode_delivery(std::string_view payload, LiveTap* pool = nullptr);

}  // namespace callscope::format
