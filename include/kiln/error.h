// kiln's typed exceptions. Every message starts with "[op]" and names the
// shapes and dtypes involved. The Python bindings map them to ValueError,
// TypeError, IndexError, NotImplementedError, OverflowError, MemoryError,
// OSError (FileNotFoundError, PermissionError, ... by errno) and RuntimeError.
#pragma once

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A bad value or shape (Python ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};
// An unsupported or mismatched dtype (Python TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};
// An index out of range (Python IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};
// A valid request this build cannot carry out (Python NotImplementedError).
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
// A number that does not fit where it goes: a size past int64, a fill value
// outside its dtype's range (Python OverflowError).
class OverflowError : public Error {
 public:
  using Error::Error;
};
// Memory the system would not give (Python MemoryError); bytes() is the request.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& what, size_t bytes) : Error(what), bytes_(bytes) {}
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};
// A file that cannot be opened or read; error_code() is the errno (Python raises
// the matching OSError subclass: FileNotFoundError, PermissionError,
// IsADirectoryError, ...). A ValueError so that code catching a bad path as one
// keeps working.
class OSError : public ValueError {
 public:
  OSError(const std::string& what, int error_code, std::string path)
      : ValueError(what), error_code_(error_code), path_(std::move(path)) {}
  int error_code() const { return error_code_; }
  const std::string& path() const { return path_; }

 private:
  int error_code_;
  std::string path_;
};
// "[op] cannot open PATH: <strerror(error_code)>" as an OSError. Inline: the
// parsers' fuzz targets build without the rest of the library.
[[noreturn]] inline void throw_os_error(const char* op, const std::string& path, int error_code,
                                        const char* action = "cannot open") {
  throw OSError(std::string("[") + op + "] " + action + " " + path + ": " + std::strerror(error_code),
                error_code, path);
}

// KILN_CHECK(cond, ExceptionType, "[op] message " << value ...)
#define KILN_CHECK(cond, Exc, msg)       \
  do {                                   \
    if (!(cond)) {                       \
      ::kiln::detail_throw<Exc>([&](std::ostringstream& os_) { os_ << msg; }); \
    }                                    \
  } while (0)

}  // namespace kiln

#include <sstream>
namespace kiln {
template <typename Exc, typename F>
[[noreturn]] void detail_throw(F&& write) {
  std::ostringstream os;
  write(os);
  throw Exc(os.str());
}
}  // namespace kiln
