// The CLI's edges; see cli_io.h.
#include "cli_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "kiln/error.h"
#include "kiln/tokenizer.h"

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
  const size_t valid = utf8_valid_prefix(text);
  if (valid == text.size()) return std::nullopt;
  return valid;
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
