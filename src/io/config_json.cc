#include "io/config_json.h"

#include <cerrno>
#include <cstdio>
#include <set>
#include <vector>

#include "kiln/error.h"

namespace kiln::io {

json parse_json_strict(std::string_view text, const char* op, const std::string& name) {
  // One key set per open object; a key seen twice in the same object is an error
  // (nlohmann keeps the last silently, which would let a file hide an entry).
  std::vector<std::set<std::string>> keys;
  std::string dup;
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && dup.empty())
          dup = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> the part after "] ".
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    // The parser quotes the offending bytes; keep the message printable ASCII.
    std::string clean;
    for (unsigned char ch : what) {
      if (ch >= 0x20 && ch < 0x7f) {
        clean.push_back(char(ch));
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02X", ch);
        clean += buf;
      }
    }
    what = clean;
    KILN_CHECK(false, ValueError, "[" << op << "] invalid JSON in " << name << ": " << what);
  }
  KILN_CHECK(dup.empty(), ValueError, "[" << op << "] duplicate key '" << dup << "' in " << name);
  return j;
}

std::string read_text_file(const std::string& path, const char* op, size_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw_os_error(op, path, errno);
  std::string s;
  char buf[1 << 16];
  size_t n;
  errno = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (s.size() + n > max_bytes) {
      std::fclose(f);
      KILN_CHECK(false, ValueError, "[" << op << "] " << path << " is larger than " << max_bytes << " bytes");
    }
    s.append(buf, n);
  }
  // A directory opens but does not read (EISDIR).
  const int err = std::ferror(f) ? (errno ? errno : EIO) : 0;
  std::fclose(f);
  if (err) throw_os_error(op, path, err, "cannot read");
  return s;
}

bool json_is_int(const json& v) { return v.is_number_integer(); }

}  // namespace kiln::io
