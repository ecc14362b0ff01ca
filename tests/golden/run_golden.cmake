# Runs one golden case: text -> trace, then each view, compared with the
# expected files. Variables: TEXT_TRACE, CALLSCOPE, CASE (path without .txt),
# WORK (scratch dir). A mismatch prints both versions; with -DUPDATE=1 the
# output is written over the expected files instead (docs/testing.md).
get_filename_component(name ${CASE} NAME)
set(trace ${WORK}/${name}.trace)
execute_process(COMMAND ${TEXT_TRACE} ${CASE}.txt ${trace} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "text_trace failed: ${err}")
endif()
set(views "dump" "dump --stats" "info")
set(suffixes "dump" "stats" "info")
# replay (docs/replay.md): -F and --min values fit the replay_* cases.
list(APPEND views "replay" "replay -F app+0x401100" "replay -D 2" "replay --min 1us"
  "replay --from 2us --to 16.1us" "replay --format csv" "replay --format json")
list(APPEND suffixes "replay" "replay_f" "replay_d" "replay_min" "replay_range" "replay_csv" "replay_json")
# report (docs/report.md): the --callers/--callees globs fit the report_* cases.
list(APPEND views "report" "report --tree" "report --callers *0x401200 --callees *0x401000"
  "report --format csv" "report --format json" "report --threads -s calls -n 3 -m prof*"
  "report --tree --merge --depth 3 --format csv" "report --tree --threshold 20 --format json"
  "report --tree -F *0x401200")
list(APPEND suffixes "report" "tree" "callers" "csv" "json" "threads" "merge_csv" "tree_json" "tree_f")
# report --stack (measured stack use).
list(APPEND views "report --stack" "report --stack --format csv")
list(APPEND suffixes "stack" "stack_csv")
# memory (docs/memory.md).
list(APPEND views "memory" "memory --by path --threshold 0" "memory --peak" "memory --leaks" "memory --window phase2.."
  "memory --window 1.1us..1.4us --by function --format csv" "memory --by tag,thread --format json"
  "memory --timeline --width 16 --by tag" "memory --sizes" "memory --leaks --format csv" "memory --peak --format json"
  "report --tree --metric alloc_bytes --threshold 0" "report --metric leaked_bytes --format csv")
list(APPEND suffixes "memory" "memory_path" "memory_peak" "memory_leaks" "memory_window" "memory_window_csv"
  "memory_json" "memory_timeline" "memory_sizes" "memory_leaks_csv" "memory_peak_json" "memory_tree_metric"
  "memory_metric_csv")
# memory across processes (docs/memory.md, "Processes"): the process key.
list(APPEND views "memory --by process" "memory --by process,function --format csv"
  "memory --timeline --width 16 --by process" "memory --window 1us..5.5us --by process --format csv")
list(APPEND suffixes "memory_by_process" "memory_by_process_csv" "memory_timeline_process" "memory_window_process_csv")
# Profile mode (docs/profile.md): snapshots and the difference between two
# (--diff takes the trace first: TRACE stands for it).
list(APPEND views "report --dump 1" "report --tree --dump 1" "report TRACE --diff 1 2"
  "report TRACE --diff 1 2 --format csv" "report TRACE --diff 1 2 --format json")
list(APPEND suffixes "dump1" "tree_dump1" "diff" "diff_csv" "diff_json")
# --diff honours -F (repeatable) and -t; busy threads: --idle, --min-busy,
# --by-busy; -t takes one value, leaving the trace to the positional.
list(APPEND views "report TRACE --diff 1 2 -F *0x401200 -F *0x401600" "report TRACE --diff 1 2 -t 1"
  "report --threads --idle *0x401300 --by-busy" "report --threads --min-busy 99.5" "report -t 1 TRACE")
list(APPEND suffixes "diff_f" "diff_t" "idle" "min_busy" "thread_first")
# export (docs/export.md): the aggregated and the JSON timeline formats.
list(APPEND views "export -f folded" "export -f folded --by calls --merge" "export -f chrome" "export -f speedscope"
  "export -f folded --dump 1")
list(APPEND suffixes "folded" "folded_calls" "chrome" "speedscope" "folded_dump1")
# Waiting (docs/report.md, "Where the threads waited"): the kernel's events.
list(APPEND views "report --wait" "report --wait --tree" "report --wait --format json" "report --wait -F *0x401100 --format csv")
list(APPEND suffixes "wait" "wait_tree" "wait_json" "wait_f_csv")
# Page faults (docs/report.md, "Where the threads took page faults").
list(APPEND views "report --faults" "report --faults --tree" "report --faults --format json" "report --faults --tree --format csv")
list(APPEND suffixes "faults" "faults_tree" "faults_json" "faults_tree_csv")
# CPU samples (docs/report.md, "Where the threads ran: --samples").
list(APPEND views "report --samples" "report --samples --tree" "report --samples --format json")
list(APPEND suffixes "samples" "samples_tree" "samples_json")
# Block I/O (docs/report.md, "Block I/O: --io").
list(APPEND views "report --io" "report --io --tree" "report --io --format json")
list(APPEND suffixes "io" "io_tree" "io_json")
# replay --min holds the kernel's lines with the frame they are in, and drops them with it.
list(APPEND views "replay --min 5us")
list(APPEND suffixes "replay_min5")
list(LENGTH views n)
math(EXPR last "${n} - 1")
set(failed FALSE)
foreach(i RANGE ${last})
  list(GET views ${i} view)
  list(GET suffixes ${i} suffix)
  set(expected_file ${CASE}.${suffix}.expected)
  if(NOT EXISTS ${expected_file})
    continue()
  endif()
  separate_arguments(args UNIX_COMMAND "${view}")
  # The trace goes last, or where the view says TRACE.
  set(trace_arg ${trace})
  list(FIND args "TRACE" at)
  if(at GREATER -1)
    list(REMOVE_AT args ${at})
    list(INSERT args ${at} ${trace})
    set(trace_arg "")
  endif()
  execute_process(COMMAND ${CALLSCOPE} ${args} ${trace_arg} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  # The trace path and size depend on where the test runs.
  string(REGEX REPLACE "trace:      [^\n]*\n" "trace:      TRACE\n" out "${out}")
  # So does the compressed size (the zstd version).
  string(REGEX REPLACE ", [0-9.]+ bytes/call on disk" "" out "${out}")
  # report --diff names the trace in its labels.
  string(REPLACE "${trace}" "TRACE" out "${out}")
  file(READ ${expected_file} expected)
  if(UPDATE AND NOT out STREQUAL expected)
    # -DUPDATE=1: the views' output becomes the expected files (read the
    # diff before committing it).
    file(WRITE ${expected_file} "${out}")
  elseif(NOT out STREQUAL expected)
    message(SEND_ERROR "${name}: '${view}' differs from ${expected_file}\n--- expected\n${expected}--- actual (exit ${rc})\n${out}--- stderr\n${err}")
    set(failed TRUE)
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "golden case ${name} failed")
endif()
