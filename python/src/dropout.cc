// kiln.nn.functional.{dropout, dropout1d, dropout2d, dropout3d, alpha_dropout,
// feature_alpha_dropout} with torch's argument names and defaults; the mask is
// drawn from kiln's default generator (kiln.manual_seed makes it
// reproducible). torch's rank warnings of dropout2d/dropout3d are Python
// UserWarnings here too.
#include "kiln/dropout.h"

#include <string>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

using Fn = Tensor (*)(const Tensor&, double, bool, bool, Generator*);

void warn(const std::string& msg) {
  if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) != 0) throw nb::python_error();
}

// torch's warnings for ranks dropout2d / dropout3d were not made for.
void rank_warnings(const char* op, const Tensor& x) {
  const std::string name = op;
  const int nd = x.dim();
  const bool two = name == "dropout2d";
  if (two ? (nd != 3 && nd != 4) : (nd != 4 && nd != 5))
    warn(name + ": Received a " + std::to_string(nd) + "-D input to " + name +
         ", which is deprecated and will result in an error in a future release. To retain the behavior and "
         "silence this warning, please use dropout instead. Note that " +
         name + " exists to provide channel-wise dropout on inputs with " + (two ? "2" : "3") +
         " spatial dimensions, a channel dimension, and an optional batch dimension (i.e. " +
         (two ? "3D or 4D" : "4D or 5D") + " inputs).");
  if (two && nd == 3)
    warn(
        "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
        "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
        "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
        "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
        "instead.");
}

// Returns the input object itself where torch does: in place, or when
// dropout does nothing (not training, p == 0, no elements).
nb::object call(const char* op, Fn fn, nb::handle input, double p, bool training, bool inplace) {
  const Tensor x = to_tensor(input);
  if (std::string(op) == "dropout2d" || std::string(op) == "dropout3d") rank_warnings(op, x);
  Tensor y = fn(x, p, training, inplace, nullptr);
  if (is_tensor(input) && (inplace || !training || p == 0.0 || x.numel() == 0)) return nb::borrow(input);
  return nb::cast(std::move(y));
}

}  // namespace
}  // namespace kiln::py

void init_dropout(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  struct Form {
    const char* name;
    Fn fn;
    bool training;  // torch's default
  };
  static const Form forms[] = {{"dropout", &kiln::dropout, true},
                               {"dropout1d", &kiln::dropout1d, true},
                               {"dropout2d", &kiln::dropout2d, true},
                               {"dropout3d", &kiln::dropout3d, true},
                               {"alpha_dropout", &kiln::alpha_dropout, false},
                               {"feature_alpha_dropout", &kiln::feature_alpha_dropout, false}};
  for (const Form& f : forms) {
    m.def((std::string("nn_functional_") + f.name).c_str(),
          [f](nb::handle input, double p, bool training, bool inplace) {
            return call(f.name, f.fn, input, p, training, inplace);
          },
          "input"_a, "p"_a = 0.5, "training"_a = f.training, "inplace"_a = false);
  }
}
