# Writes OUT: a C++ file defining `extern const char NAME[]` with the bytes
# of IN (a script or stylesheet of the pictures), so that the binary carries
# them and writes self-contained files.
file(READ "${IN}" content)
string(FIND "${content}" ")cs_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )cs_embed\"")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/embed.cmake.\nnamespace callscope::exporter {\nextern const char ${NAME}[];\nconst char ${NAME}[] = R\"cs_embed(${content})cs_embed\";\n}  // namespace callscope::exporter\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
