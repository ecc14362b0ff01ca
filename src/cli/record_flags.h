// What `record` and `attach` share on their command line: the flags of the
// recording itself (output, raw session, compression, what to do when the
// recorder falls behind), and the runtime's settings resolved into the
// recorder::RecordOptions (common/config.h: flags > CALLSCOPE_* > callscope.toml).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/config.h"
#include "common/result.h"
#include "recorder/recording.h"

namespace callscope::cli {

// -f/--force and --keep-raw.
void add_output_flags(CLI::App& app, recorder::RecordOptions& o);
// --events and --sample: the kernel's events beside the calls (record;
// attach does not follow them yet).
void add_kernel_event_flags(CLI::App& app, recorder::RecordOptions& o);
// --drop-when-behind, --raw-dir (`raw_dir_help`: while what runs) and --level.
void add_stream_flags(CLI::App& app, recorder::RecordOptions& o, const std::string& raw_dir_when);
// The output and the runtime's environment from the settings; their
// warnings said as `who`'s.
Status resolve_record_settings(config::Flags& settings, const char* who, recorder::RecordOptions& o);

}  // namespace callscope::cli
