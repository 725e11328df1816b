// What every kiln command shares at its edges: reading a prompt (stdin or a
// file, one trailing newline dropped), checking text is UTF-8, writing stdout
// and files with their errors reported, the exit statuses, and the name of a
// model from its path.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln::cli {

// A command line that names things wrongly (no prompt, a text that is not
// UTF-8): main prints "kiln: error: WHAT" and exits with status 2, as for a
// flag CLI11 refuses.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Output that could not be written (a full disk, /dev/full): main prints
// "kiln COMMAND: cannot write WHERE: REASON" and exits with status 1.
struct OutputError : std::runtime_error {
  OutputError(std::string where, int err);
  std::string where;  // "output" (stdout) or a file name
  int err;            // errno
};

// Flushes stdout; OutputError when anything written to it since the start was lost.
void flush_stdout();
// Writes `text` to stdout and flushes it (streamed text): OutputError on failure.
void write_stdout(std::string_view text);
// Writes `text` to the file `path` (created or truncated): OutputError on failure.
void write_file(const std::string& path, std::string_view text);

// `text` without one trailing "\n" or "\r\n" (what a shell's echo or an
// editor adds after the last line).
std::string strip_one_newline(std::string text);
// All of standard input ("-") or of the file `path`, as bytes; ValueError when
// it cannot be read. Nothing is stripped.
std::string read_text_input(const std::string& path);

// The byte offset of the first byte in `text` that does not belong to a
// well-formed UTF-8 sequence (overlong forms, surrogates and code points past
// U+10FFFF are ill-formed), or nullopt when all of it is UTF-8.
std::optional<size_t> invalid_utf8_offset(std::string_view text);

// The name a path gives its model: the last non-empty component, so
// "models/smol/" and "models/smol" both give "smol" ("." and ".." resolved).
std::string model_name(const std::string& path);

}  // namespace kiln::cli
