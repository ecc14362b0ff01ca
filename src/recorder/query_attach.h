// `query -p PID`: a query attached to a program that `callscope record` is
// recording. The recorder listens on <session>/query.sock; a query that
// connects gets the recording's tap (format/live_stream.h) over the socket
// (format/live_wire.h says what passes), from the moment it attached, while
// the trace goes on being written as if nothing had happened. One query at
// a time. A query that goes away (exit(), Ctrl-C) takes the tap with it; the
// recording goes on.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "format/live_stream.h"
#include "recorder/ctl_socket.h"

namespace callscope::recorder {

// The recorder's side, on the thread that polls the stream (Drainer).
class QueryServer {
 public:
  // Listens in `session`. `events`: the recording keeps events (mode
  // record); else a query is told why it cannot attach. A recording that
  // cannot listen goes on unqueried (nullptr).
  static std::unique_ptr<QueryServer> open(const std::string& session, format::LiveStream& live, bool events);
  ~QueryServer();  // closes, and removes the socket
  QueryServer(const QueryServer&) = delete;
  QueryServer& operator=(const QueryServer&) = delete;
  // After each poll of the stream: a query that connected gets the tap, one
  // that went away loses it.
  void poll();
  // What the drainer sleeps on for us: the listening socket and the
  // connections whose hello has not come.
  void add_poll_fds(std::vector<pollfd>& fds) const;
  // A hello is awaited (each has a deadline).
  bool waiting() const { return !pending_.empty(); }

 private:
  explicit QueryServer(format::LiveStream& live);
  void greet(Fd fd, const std::string& hello);
  class SocketTap;
  struct Pending {  // a connection whose hello has not come whole yet
    Fd fd;
    std::string got;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Pending> pending_;
  format::LiveStream& live_;
  std::string path_;
  bool events_ = true;
  Fd listen_;
  std::unique_ptr<SocketTap> tap_;
};

// The query's side.
struct Attached {
  Fd fd;
  pid_t pid = 0;        // the program's (PID, or the program of the recorder PID)
  std::string session;  // the recording's raw session directory
  format::ClockKind clock = format::ClockKind::kMonotonic;
  uint64_t origin = 0;
  uint64_t now_tick = 0;  // when the recorder took us on (trace ticks)
};
// Finds the recording PID is in (by the session files its runtime maps and
// holds open, traced_process.h: not by its environment, which the program
// may have written over), and attaches to it; `ticks_per_ns`: our measure
// of the clock (the recorder's rounds of the tap are timed with it).
Result<Attached> attach_to(pid_t pid, double ticks_per_ns);
// The next delivery (its `last` set after the program's end), or an error:
// the connection closed (the recorder ended, or let us go), or damage.
// `buffer` is kept from one call to the next; `pool` gives buffers to fill.
Result<format::LiveDelivery> read_delivery(int fd, std::string& buffer, format::LiveTap* pool);

}  // namespace callscope::recorder
