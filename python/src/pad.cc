// kiln.nn.functional.{pad, pixel_shuffle, pixel_unshuffle}, with torch's
// argument names.
#include "kiln/pad.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

using namespace kiln;

void init_pad(nb::module_& m) {
  m.def(
      "nn_functional_pad",
      [](const Tensor& input, const std::vector<int64_t>& pad, const std::string& mode,
         std::optional<double> value) { return kiln::pad(input, pad, pad_mode(mode), value); },
      "input"_a, "pad"_a, "mode"_a = "constant", "value"_a = nb::none(),
      "Pads the last len(pad) // 2 dims of input, pad = (left, right) pairs from the last dim backwards "
      "(torch.nn.functional.pad); negative pads crop. mode: constant, reflect, replicate or circular.");
  m.def("nn_functional_pixel_shuffle", &pixel_shuffle, "input"_a, "upscale_factor"_a,
        "[*, C * r^2, H, W] -> [*, C, H * r, W * r] (torch.nn.functional.pixel_shuffle).");
  m.def("nn_functional_pixel_unshuffle", &pixel_unshuffle, "input"_a, "downscale_factor"_a,
        "[*, C, H * r, W * r] -> [*, C * r^2, H, W] (torch.nn.functional.pixel_unshuffle).");
}
