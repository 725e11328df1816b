// The CLI's edges; see cli_io.h.
#include "kiln/cli_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "kiln/error.h"

namespace kiln::cli {

namespace fs = std::filesystem;

OutputError::OutputError(std::string where_, int err_)
    : std::runtime_error("cannot write " + where_ + ": " + std::strerror(err_)),
      where(std::move(where_)),
      err(err_) {}

void flush_stdout() {
  // glibc keeps what a failed write could not send in the buffer, so this
  // flush retries it and reports the error with its errno (ENOSPC, EIO ...).
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (!flushed || std::ferror(stdout)) throw OutputError("output", err != 0 ? err : EIO);
}

void write_stdout(std::string_view text) {
  if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
  flush_stdout();
}

void write_file(const std::string& path, std::string_view text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw OutputError(path, errno);
  errno = 0;
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  const bool flushed = std::fflush(f) == 0;
  if (err == 0) err = errno;
  const bool closed = std::fclose(f) == 0;  // an NFS server may report a failure only here
  if (err == 0) err = errno;
  if (!wrote || !flushed || !closed) throw OutputError(path, err != 0 ? err : EIO);
}

std::string strip_one_newline(std::string text) {
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
  }
  return text;
}

std::string read_text_input(const std::string& path) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw ValueError("cannot read standard input");
    return text;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ValueError(path + " is a directory, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("cannot read " + path + ": " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ValueError("cannot read " + path);
  return text;
}

std::optional<size_t> invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence length and the range of its second byte (Unicode 15, table 3-7),
    // which is what rules out overlong forms, surrogates and values past U+10FFFF.
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;  // a continuation byte, C0/C1 or F5..FF
    }
    if (i + 1 >= n || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (i + k >= n || (s[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::nullopt;
}

std::string model_name(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "dir/" -> "dir"
  if (p.empty() || p.filename() == "." || p.filename() == "..") {
    const fs::path abs = fs::absolute(path, ec).lexically_normal();
    p = abs.filename().empty() ? abs.parent_path() : abs;
  }
  const std::string name = p.filename().string();
  return name.empty() ? path : name;
}

}  // namespace kiln::cli
