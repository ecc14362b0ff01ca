// text_trace INPUT.txt OUTPUT.trace: builds a trace from its text form.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "text_trace.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: text_trace INPUT.txt OUTPUT.trace\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "text_trace: cannot read '%s'\n", argv[1]);
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(argv[2]);
  auto st = callscope::golden::text_to_trace(ss.str(), argv[2]);
  if (!st) {
    std::fprintf(stderr, "text_trace: %s: %s\n", argv[1], st.error().message().c_str());
    return 1;
  }
  return 0;
}
