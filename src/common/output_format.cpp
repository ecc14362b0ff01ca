#include "common/output_format.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace callscope {

Result<OutputFormat> parse_output_format(std::string_view name) {
  if (name == "text") return OutputFormat::kText;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return Error("unknown format '" + std::string(name) + "' (valid formats: " + kOutputFormatNames + ")");
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

namespace {

// Bytes of the UTF-8 sequence at s[i] (2 to 4), or 0 when it is not one
// (overlong forms, surrogates and values past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (at(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  if (cp >= 0x80 && cp <= 0x9F) return 0;  // C1 controls: CSI, OSC... for 8-bit terminals
  return n;
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += s[i++];
      continue;
    }
    if (c >= 0x80) {
      if (const size_t n = utf8_sequence(s, i)) {
        out.append(s, i, n);
        i += n;
        continue;
      }
    }
    switch (c) {
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
    }
    ++i;
  }
  return out;
}

std::string terminal_safe_lines(std::string_view s) {
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find_first_of("\n\t", start);
    out += terminal_safe(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    out += s[end];
    start = end + 1;
  }
}

void print_warning(const char* command, const std::string& text) {
  std::fprintf(stderr, "callscope %s: warning: %s\n", command, terminal_safe(text).c_str());
}

}  // namespace callscope
