// kiln's typed exceptions. Every message starts with "[op]" and names the
// shapes and dtypes involved. The Python bindings map them to ValueError,
// TypeError, IndexError, NotImplementedError and RuntimeError.
#pragma once

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
