// callscope's static stack analysis, the library behind `callscope stack`:
// frame sizes per function (CFI, else the prologue), the static call graph,
// and the worst-case stack depth of entry points.
//
// Addresses are ELF virtual addresses as in the file: load-relative for PIE
// executables and shared libraries. To compare with a recorded run, subtract
// the module's load bias from a runtime address, then call function_at().
// Byte figures always include the return address pushed by the call and the
// registers pushed by the prologue, as GCC's -fstack-usage does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "stack/call_graph.h"
#include "stack/pattern.h"

namespace callscope::stack {

enum class FrameSource : uint8_t {
  kCfi,             // largest CFA offset in .eh_frame/.debug_frame
  kCfiAndPrologue,  // CFI, plus the prologue where the CFA moved to rbp
  kPrologue,        // no CFI: read from the prologue alone
  kPrologueCfiUnreadable,  // the file's CFI is corrupt where this function's would be
};
const char* frame_source_name(FrameSource source);

struct FunctionInfo {
  uint64_t address = 0;  // ELF virtual address of the entry
  uint64_t size = 0;     // bytes of code
  std::string name;      // demangled; "0x<address>" when the file has no name for it
  std::string symbol;    // symbol as in the file (mangled); empty when unnamed
  bool exported = false; // a global symbol
  std::string file;      // declared in (debug information); empty when unknown
  uint32_t line = 0;
  uint32_t frame_bytes = 8;
  bool dynamic = false;         // the frame grows at run time (alloca, VLA)
  // Bytes used below rsp without moving it (the ABI's 128-byte red zone, in
  // leaf functions): not part of the frame (as in gcc's .su) but of the
  // worst case below it.
  uint32_t red_zone_bytes = 0;
  // Bytes between the CFA and rsp at the function's first call, when the
  // code before it is straight (else 8): the sp a recording sees for the
  // function (its hook call comes first), to set a measured depth beside
  // the static one.
  uint32_t sp_at_first_call = 8;
  FrameSource source = FrameSource::kCfi;
  bool indirect_calls = false;  // calls through a pointer (unknown callee)
  bool indirect_closed = false; // ... but the user's edges file lists its callees
  bool external_calls = false;  // calls into other modules
  bool external_besides_hooks = false;  // ... other than instrumentation hooks (__cyg_profile_*, mcount)
  bool thread_entry = false;    // passed to pthread_create/thrd_create
  bool address_in_data = false; // object files: stored in data (an ops table, a callback)
};

// A call to a function another file defines, by name (object files: what
// the members of an archive resolve among themselves).
struct ExternalCall {
  uint32_t caller = 0;
  std::string name;
  bool tail = false;
};

enum class EdgeKind : uint8_t { kCall, kTailCall, kUser };

struct CallEdge {
  uint32_t caller = 0;  // index in StackModel::functions
  uint32_t callee = 0;
  EdgeKind kind = EdgeKind::kCall;
  uint64_t site = 0;    // address of the call; 0 for user edges
};

// A call or tail jump whose callee the code does not name (a function
// pointer, a virtual call): the places an edges file can close.
struct IndirectSite {
  uint32_t function = 0;  // index in StackModel::functions
  uint64_t site = 0;      // address of the instruction
  bool jump = false;      // a tail jump through a pointer, not a call
  // With AnalyzeOptions::site_details: the instruction ("call qword ptr
  // [rax + 0x10]") and its source line when the debug information has it.
  std::string instruction;
  std::string file;
  uint32_t line = 0;
};

struct StackModel {
  std::string path;
  std::string module;         // base name of the file
  bool shared_object = false; // ET_DYN: PIE executable or shared library
  bool has_symtab = false;    // false: stripped, names come from .dynsym
  bool has_cfi = false;
  std::string cfi_problem;              // why part of the CFI could not be read, or ""
  std::vector<FunctionInfo> functions;  // sorted by address
  std::vector<CallEdge> edges;
  std::vector<IndirectSite> indirect_sites;  // in address order
  std::vector<ExternalCall> external_names;  // object files only
  bool relocatable = false;                  // an object file, a .ko, or an archive of them
  std::string isa = "x86-64";                // "x86-64", "aarch64" or "thumb"
  uint32_t undecodable_bytes = 0;       // code bytes the scanner skipped

  // The function whose code holds `address` (ELF virtual address).
  std::optional<uint32_t> function_at(uint64_t address) const;
};

struct AnalyzeOptions {
  bool site_details = false;  // disassemble and place every indirect site
};

// Reads `path` and builds the model. Errors name the file and the problem
// (not ELF, truncated, unsupported architecture).
Result<StackModel> analyze_binary(const std::string& path, const AnalyzeOptions& options = {});

// Adds the user's edges; a caller named in them has its indirect calls closed.
// An edge side that matches no function is an error naming the line.
Status apply_user_edges(StackModel& model, const std::vector<UserEdge>& edges);

// Indices of the functions matching any pattern (all when `patterns` is empty).
std::vector<uint32_t> select_functions(const StackModel& model,
                                       const std::vector<FunctionPattern>& patterns);

// `main` and the thread start routines found, in address order.
std::vector<uint32_t> default_entries(const StackModel& model);

struct WorstCase {
  CallGraph graph;
  Adjacency adjacency;
  Components components;
  std::vector<Depth> depths;  // per function
};
// With `hooks_are_internal`, calls to instrumentation hooks do not make a
// figure `external`: for setting it beside a recording, which never sees
// the hooks' frames.
WorstCase compute_worst_case(const StackModel& model, bool hooks_are_internal = false);

}  // namespace callscope::stack
