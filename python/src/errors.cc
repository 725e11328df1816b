// C++ exceptions -> Python exceptions. kiln's typed errors become the matching
// built-in exceptions; the std:: exceptions that can escape library code (a failed
// allocation, vector::reserve, nanobind's cast_error) get a kiln message instead of
// bare "std::bad_cast" / "std::bad_alloc".
#include <cerrno>
#include <cstring>
#include <new>
#include <typeinfo>

#include "bind_util.h"

namespace nb = nanobind;

namespace kiln::py {
namespace {

// The message as a Python str: a kiln message can carry path bytes that are not
// UTF-8, which PyErr_SetString would turn into a UnicodeDecodeError.
nb::object message(const char* what) {
  PyObject* s = PyUnicode_DecodeUTF8(what, Py_ssize_t(std::strlen(what)), "backslashreplace");
  if (s == nullptr) {
    PyErr_Clear();
    return nb::str("(message not decodable)");
  }
  return nb::steal(s);
}

void set_error(PyObject* type, const char* what) { PyErr_SetObject(type, message(what).ptr()); }

void set_error(PyObject* type, const std::string& what) { set_error(type, what.c_str()); }

// The OSError subclass Python itself picks for an errno.
PyObject* os_error_type(int code) {
  switch (code) {
    case ENOENT:
      return PyExc_FileNotFoundError;
    case EACCES:
    case EPERM:
      return PyExc_PermissionError;
    case EISDIR:
      return PyExc_IsADirectoryError;
    case ENOTDIR:
      return PyExc_NotADirectoryError;
    case EEXIST:
      return PyExc_FileExistsError;
    default:
      return PyExc_OSError;
  }
}

// FileNotFoundError(message) with .errno set. filename/strerror stay unset: with
// them, OSError.__str__ would print "[Errno 2] reason: 'path'" and drop the "[op]".
void set_os_error(const OSError& e) {
  PyObject* type = os_error_type(e.error_code());
  nb::object exc = nb::steal(PyObject_CallOneArg(type, message(e.what()).ptr()));
  if (!exc.is_valid()) return;  // the constructor's own error stays set
  nb::object code = nb::int_(e.error_code());
  if (PyObject_SetAttrString(exc.ptr(), "errno", code.ptr()) != 0) PyErr_Clear();
  PyErr_SetObject(type, exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const OSError& e) {
    set_os_error(e);
  } catch (const ValueError& e) {
    set_error(PyExc_ValueError, e.what());
  } catch (const TypeError& e) {
    set_error(PyExc_TypeError, e.what());
  } catch (const IndexError& e) {
    set_error(PyExc_IndexError, e.what());
  } catch (const NotImplementedError& e) {
    set_error(PyExc_NotImplementedError, e.what());
  } catch (const OverflowError& e) {
    set_error(PyExc_OverflowError, e.what());
  } catch (const OutOfMemoryError& e) {
    set_error(PyExc_MemoryError, e.what());
  } catch (const Error& e) {
    set_error(PyExc_RuntimeError, e.what());
  } catch (const std::bad_alloc&) {
    set_error(PyExc_MemoryError, "[kiln] out of memory: a working buffer could not be allocated");
  } catch (const std::length_error& e) {
    set_error(PyExc_MemoryError,
              std::string("[kiln] cannot allocate: a working buffer larger than the maximum "
                          "size was requested (") +
                  e.what() + ")");
  } catch (const std::bad_cast&) {
    // nanobind's cast_error from an nb::cast<T>(value) inside a binding.
    set_error(PyExc_TypeError,
              "[kiln] a Python value could not be converted to the C++ type the function takes (an int out "
              "of range, or a str that is not valid Unicode?)");
  } catch (const std::overflow_error& e) {
    set_error(PyExc_OverflowError, std::string("[kiln] ") + e.what());
  } catch (const std::exception& e) {
    const std::string w = e.what();
    set_error(PyExc_RuntimeError, w.rfind('[', 0) == 0 ? w : "[kiln] " + w);
  }
}

}  // namespace

void register_error_translators() { nb::register_exception_translator(&translate); }

}  // namespace kiln::py
