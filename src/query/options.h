// D's options (#pragma D option, -x, -q): which exist, whether one is set,
// and reading them into a compiled program.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "query/lexer.h"

namespace callscope::query {

struct CompiledProgram;

// Whether setopt( ) may set option `name` while the script runs: one that
// exists, and that dtrace lets change then (quiet, the aggregations'
// sorting, and those accepted and ignored); an error saying why not.
Status check_setopt(const std::string& name);

// Whether an option is set: present and not "0"/"false"/"no".
bool option_set(const std::map<std::string, std::string>& options, const std::string& name);

// Sets the script's pragmas, then the command line's options (which win),
// into `p`: its options, quiet, nspec and strsize. A pragma's error names
// its line; `what` ("failed to compile script x.d") goes in front of it.
Status read_options(CompiledProgram& p, const std::vector<Lexer::Pragma>& pragmas,
                    const std::map<std::string, std::string>& command_line, const std::string& what);

}  // namespace callscope::query
