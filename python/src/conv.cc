// kiln.nn.functional.conv{1,2,3}d, conv_transpose{1,2,3}d and the N-d
// kiln.convolution / kiln.convolution_backward_weight, with torch's keyword
// names; int-or-tuple arguments take an int or a sequence, conv padding also
// "same" / "valid".
#include "kiln/conv.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

Tensor opt_tensor(nb::handle h) { return h.is_none() ? Tensor() : to_tensor(h); }

// An int or a sequence of ints (torch's _size_Nt).
std::vector<int64_t> int_list(nb::handle h, const char* op, const char* what) {
  if (nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h)) return {nb::cast<int64_t>(h)};
  if (nb::isinstance<nb::sequence>(h) && !nb::isinstance<nb::str>(h)) {
    std::vector<int64_t> v;
    for (nb::handle e : nb::iter(h)) {
      if (!nb::isinstance<nb::int_>(e) || nb::isinstance<nb::bool_>(e))
        throw nb::type_error(
            (std::string("[") + op + "] " + what + " must be an int or a tuple of ints").c_str());
      v.push_back(nb::cast<int64_t>(e));
    }
    if (!v.empty()) return v;
  }
  throw nb::type_error((std::string("[") + op + "] " + what + " must be an int or a tuple of ints").c_str());
}

ConvPadding conv_padding(nb::handle h, const char* op) {
  if (nb::isinstance<nb::str>(h)) return ConvPadding(nb::cast<std::string>(h));
  return ConvPadding(int_list(h, op, "padding"));
}

void def_conv(nb::module_& m, int nd) {
  const std::string op = "conv" + std::to_string(nd) + "d";
  m.def(("nn_functional_" + op).c_str(),
        [nd, op](nb::handle input, nb::handle weight, nb::handle bias, nb::handle stride, nb::handle padding,
                 nb::handle dilation, int64_t groups) {
          return conv_nd(nd, to_tensor(input), to_tensor(weight), opt_tensor(bias),
                         int_list(stride, op.c_str(), "stride"), conv_padding(padding, op.c_str()),
                         int_list(dilation, op.c_str(), "dilation"), groups);
        },
        "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
        "groups"_a = 1);
  const std::string top = "conv_transpose" + std::to_string(nd) + "d";
  m.def(("nn_functional_" + top).c_str(),
        [nd, top](nb::handle input, nb::handle weight, nb::handle bias, nb::handle stride, nb::handle padding,
                  nb::handle output_padding, int64_t groups, nb::handle dilation) {
          const char* o = top.c_str();
          return conv_transpose_nd(nd, to_tensor(input), to_tensor(weight), opt_tensor(bias),
                                   int_list(stride, o, "stride"), int_list(padding, o, "padding"),
                                   int_list(output_padding, o, "output_padding"), groups,
                                   int_list(dilation, o, "dilation"));
        },
        "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0, "output_padding"_a = 0,
        "groups"_a = 1, "dilation"_a = 1);
}

}  // namespace
}  // namespace kiln::py

void init_conv(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  for (int nd = 1; nd <= 3; ++nd) def_conv(m, nd);
  m.def(
      "convolution",
      [](nb::handle input, nb::handle weight, nb::handle bias, nb::handle stride, nb::handle padding,
         nb::handle dilation, bool transposed, nb::handle output_padding, int64_t groups) {
        const char* o = "convolution";
        return convolution(to_tensor(input), to_tensor(weight), opt_tensor(bias),
                           int_list(stride, o, "stride"), int_list(padding, o, "padding"),
                           int_list(dilation, o, "dilation"), transposed,
                           int_list(output_padding, o, "output_padding"), groups);
      },
      "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "dilation"_a, "transposed"_a,
      "output_padding"_a, "groups"_a);
  m.def(
      "convolution_backward_weight",
      [](nb::handle input, nb::handle grad_output, const std::vector<int64_t>& weight_shape,
         nb::handle stride, nb::handle padding, nb::handle dilation, bool transposed,
         nb::handle output_padding, int64_t groups) {
        const char* o = "convolution_backward_weight";
        return convolution_backward_weight(to_tensor(input), to_tensor(grad_output), Shape(weight_shape),
                                           int_list(stride, o, "stride"), int_list(padding, o, "padding"),
                                           int_list(dilation, o, "dilation"), transposed,
                                           int_list(output_padding, o, "output_padding"), groups);
      },
      "input"_a, "grad_output"_a, "weight_shape"_a, "stride"_a, "padding"_a, "dilation"_a, "transposed"_a,
      "output_padding"_a, "groups"_a);
}
