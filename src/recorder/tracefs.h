// Part of the recorder: the kernel's tracepoints as perf_event_open wants
// them -- an event's id and where its fields lie in the raw record -- read
// from tracefs (events/SYSTEM/NAME/{id,format}). The layout is read at run
// time, not assumed: it changes between kernels.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"

namespace callscope::recorder {

struct Tracepoint {
  uint64_t id = 0;  // perf_event_attr.config, and the raw record's common_type
  struct Field {
    uint32_t offset = 0, size = 0;  // size 0: no such field
  };
  std::map<std::string, Field> fields;
  // The field `name`, looked up once (a reader of many records keeps it).
  Field field(const std::string& name) const {
    auto it = fields.find(name);
    return it == fields.end() ? Field{} : it->second;
  }
  // Field `f` of a raw record (`raw`, `size` bytes), as an integer: 0 when
  // the record is too short or the field is not one of 1, 2, 4, 8 bytes.
  static int64_t value(const uint8_t* raw, size_t size, Field f);
  int64_t get(const uint8_t* raw, size_t size, const std::string& name) const {
    return value(raw, size, field(name));
  }
};

// Where tracefs is mounted ("/sys/kernel/tracing", or the older
// debugfs place), or an error that says how to mount it or why it cannot
// be read, and the fix.
Result<std::string> tracefs_dir();
// The tracepoint SYSTEM:NAME (e.g. "sched", "sched_switch"); an error names
// what is missing.
Result<Tracepoint> read_tracepoint(const std::string& system, const std::string& name);
// The parsed "format" file of a tracepoint (tests use it with a
// hand-written text).
Result<Tracepoint> parse_tracepoint_format(const std::string& text);

}  // namespace callscope::recorder
