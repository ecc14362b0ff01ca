// The recording's flags and settings, shared by record and attach (record_flags.h).
#include "cli/record_flags.h"

#include <sstream>
#include <vector>

#include "cli/command.h"

namespace callscope::cli {

using recorder::RecordOptions;

void add_output_flags(CLI::App& app, RecordOptions& o) {
  app.add_flag("-f,--force", o.force,
               "Overwrite the output file if it exists (a regular file, and not one another callscope is writing)");
  app.add_flag("--keep-raw", o.keep_raw, "Keep the raw session directory after writing the trace");
}

void add_kernel_event_flags(CLI::App& app, RecordOptions& o) {
  app.add_option_function<std::string>(
         "--events",
         [&o](const std::string& v) {
           o.sys_events = o.sys_syscalls = o.sys_faults = o.sys_io = false;
           std::stringstream in(v);
           for (std::string set; std::getline(in, set, ',');) {
             if (set == "sched") o.sys_events = true;
             if (set == "syscalls") o.sys_syscalls = true;
             if (set == "faults") o.sys_faults = true;
             if (set == "io") o.sys_io = true;
           }
         },
         "The kernel's events recorded beside the calls, a comma list: sched (the threads' context switches: "
         "running, runnable or blocked; as root or with CAP_PERFMON also the state a thread slept in, S or D, "
         "and who woke it), syscalls (every system call: number, arguments, result, time; root or CAP_PERFMON; "
         "every thread of the machine takes the kernel's slower system-call path meanwhile), faults (every page fault, "
         "minor or major: the address and the instruction that took it; those the kernel takes inside system "
         "calls need root or CAP_PERFMON), io (every block I/O request a thread begins -- a synchronous or direct "
         "write or read, an fsync's -- with device, sector, bytes and when the device completed it; root: the "
         "completions come from a tracefs instance of its own), or none. What the "
         "kernel refuses is left out with a warning that says why and the fix")
      ->check([](const std::string& v) -> std::string {
        std::stringstream in(v);
        int n = 0;
        bool none = false;
        for (std::string set; std::getline(in, set, ',');) {
          ++n;
          if (set == "none") none = true;
          else if (set != "sched" && set != "syscalls" && set != "faults" && set != "io")
            return "unknown event set '" + set + "' (sched, syscalls, faults, io, none)";
        }
        if (n == 0) return "no event set given (sched, syscalls, faults, io, none)";
        if (none && n > 1) return "'none' goes alone";
        return "";
      })
      ->default_str("sched");
  app.add_option("--sample", o.sample_hz,
                 "CPU samples: each thread's instruction HZ times a second of its CPU time (the kernel's cpu-clock), "
                 "each put under the call path of its thread at that moment -- a sample in libc's memcpy under the "
                 "traced function that called it; the frames the hooks do not see (a program without hooks: all) "
                 "are unwound from an 8 KiB copy of the stack by the modules' .eh_frame; 'report --samples', "
                 "'flame --samples'. The kernel's part needs root or CAP_PERFMON")
      ->type_name("HZ")
      ->check(CLI::Range(1, 10000));
}

void add_stream_flags(CLI::App& app, RecordOptions& o, const std::string& raw_dir_when) {
  app.add_flag("--drop-when-behind", o.drop_when_behind,
               "When the recorder cannot keep up, drop events (the trace marks where) instead of making the "
               "program wait (the default)");
  app.add_option("--raw-dir", o.raw_dir,
                 "Where the runtime writes raw events " + raw_dir_when +
                     " (default: /dev/shm, else the output's directory)");
  app.add_option("--level", o.level, "zstd compression level of the trace (1-19)")
      ->check(CLI::Range(1, 19))
      ->default_str("3");
}

Status resolve_record_settings(config::Flags& settings, const char* who, RecordOptions& o) {
  std::vector<std::string> warnings;
  CALLSCOPE_TRY(config::Config cfg, settings.resolve(&warnings));
  for (const std::string& w : warnings) print_warning(who, w);
  o.output = cfg.output.value_or(config::key_info(config::Key::kOutput).default_text);
  o.runtime_env = config::runtime_environment(cfg);
  return ok_status();
}

}  // namespace callscope::cli
