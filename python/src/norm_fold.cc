// kiln.nn.functional.{group_norm, instance_norm, unfold, fold} (and the
// native_group_norm pair), with torch's argument names and defaults.
#include <nanobind/stl/array.h>
#include <nanobind/stl/tuple.h>

#include "bind_util.h"
#include "kiln/fold.h"
#include "kiln/group_norm.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

Tensor opt(nb::handle h) { return h.is_none() ? Tensor() : to_tensor(h); }

// An int (both dims) or a pair of ints, as torch's _pair.
Size2 pair(nb::handle h, const char* op, const char* what) {
  const Shape s = to_shape(h, op, what);
  KILN_CHECK(s.size() == 1 || s.size() == 2, ValueError,
             "[" << op << "] " << what << " must be an int or a pair of ints, got " << s.size() << " values");
  return s.size() == 1 ? Size2{s[0], s[0]} : Size2{s[0], s[1]};
}

}  // namespace

void init_norm_fold(nb::module_& m) {
  m.def(
      "nn_functional_group_norm",
      [](nb::handle x, int64_t num_groups, nb::handle weight, nb::handle bias, double eps) {
        return kiln::group_norm(to_tensor(x), num_groups, opt(weight), opt(bias), eps);
      },
      "input"_a, "num_groups"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5);
  m.def(
      "nn_native_group_norm",
      [](nb::handle x, nb::handle weight, nb::handle bias, int64_t num_groups, double eps) {
        return kiln::native_group_norm(to_tensor(x), opt(weight), opt(bias), num_groups, eps);
      },
      "input"_a, "weight"_a.none(), "bias"_a.none(), "num_groups"_a, "eps"_a);
  m.def(
      "nn_native_group_norm_backward",
      [](nb::handle g, nb::handle x, nb::handle mean, nb::handle rstd, nb::handle weight, int64_t num_groups,
         std::array<bool, 3> mask) {
        return kiln::group_norm_backward(to_tensor(g), to_tensor(x), to_tensor(mean), to_tensor(rstd),
                                         opt(weight), num_groups, mask);
      },
      "grad_out"_a, "input"_a, "mean"_a, "rstd"_a, "weight"_a.none(), "num_groups"_a,
      "output_mask"_a = std::array<bool, 3>{true, true, true});
  m.def(
      "nn_functional_instance_norm",
      [](nb::handle x, nb::handle rm, nb::handle rv, nb::handle weight, nb::handle bias, bool use_input_stats,
         double momentum, double eps) {
        return kiln::instance_norm(to_tensor(x), opt(rm), opt(rv), opt(weight), opt(bias), use_input_stats,
                                   momentum, eps);
      },
      "input"_a, "running_mean"_a = nb::none(), "running_var"_a = nb::none(), "weight"_a = nb::none(),
      "bias"_a = nb::none(), "use_input_stats"_a = true, "momentum"_a = 0.1, "eps"_a = 1e-5);
  m.def(
      "nn_functional_unfold",
      [](nb::handle x, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
        return kiln::unfold(to_tensor(x), pair(k, "unfold", "kernel_size"), pair(d, "unfold", "dilation"),
                            pair(p, "unfold", "padding"), pair(s, "unfold", "stride"));
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
  m.def(
      "nn_functional_fold",
      [](nb::handle x, nb::handle o, nb::handle k, nb::handle d, nb::handle p, nb::handle s) {
        return kiln::fold(to_tensor(x), pair(o, "fold", "output_size"), pair(k, "fold", "kernel_size"),
                          pair(d, "fold", "dilation"), pair(p, "fold", "padding"), pair(s, "fold", "stride"));
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1);
}

}  // namespace kiln::py

// module.cc declares the init functions at global scope.
void init_norm_fold(nb::module_& m) { kiln::py::init_norm_fold(m); }
