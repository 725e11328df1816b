// kiln.nn.functional.{interpolate, upsample, upsample_nearest,
// upsample_bilinear, grid_sample} with torch's argument names and defaults: size is an
// int or one per spatial dim, scale_factor a float or one per spatial dim.
#include "kiln/interpolate.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <string>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

int spatial_dims(const Tensor& x) { return std::max(x.dim() - 2, 1); }

std::vector<int64_t> to_size_arg(nb::handle h, const Tensor& x) {
  if (h.is_none()) return {};
  if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()))
    return std::vector<int64_t>(size_t(spatial_dims(x)), to_int64(h, "interpolate", "size"));
  const Shape s = to_shape(h, "interpolate", "size");
  KILN_CHECK(!s.empty(), ValueError, "[interpolate] size must not be an empty sequence");
  return std::vector<int64_t>(s.begin(), s.end());
}

double to_float(nb::handle h) {
  KILN_CHECK(
      PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr()) || PyNumber_Check(h.ptr()),
      TypeError, "[interpolate] scale_factor must be a float or a sequence of floats, got " << py_repr(h));
  const double v = PyFloat_AsDouble(h.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

std::vector<double> to_scale_arg(nb::handle h, const Tensor& x) {
  if (h.is_none()) return {};
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr()))
    return std::vector<double>(size_t(spatial_dims(x)), to_float(h));
  std::vector<double> v;
  for (nb::handle e : h) v.push_back(to_float(e));
  KILN_CHECK(!v.empty(), ValueError, "[interpolate] scale_factor must not be an empty sequence");
  return v;
}

Tensor interpolate_py(nb::handle input, nb::handle size, nb::handle scale_factor, const std::string& mode,
                      std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
                      bool antialias) {
  const Tensor x = to_tensor(input);
  return kiln::interpolate(x, to_size_arg(size, x), to_scale_arg(scale_factor, x), mode, align_corners,
                           recompute_scale_factor, antialias);
}

}  // namespace
}  // namespace kiln::py

void init_interpolate(nb::module_& m) {
  using namespace kiln::py;
  m.def("nn_functional_interpolate", &interpolate_py, "input"_a, "size"_a = nb::none(),
        "scale_factor"_a = nb::none(), "mode"_a = "nearest", "align_corners"_a = nb::none(),
        "recompute_scale_factor"_a = nb::none(), "antialias"_a = false,
        "Resamples [N, C, *spatial] input to size or by scale_factor (torch.nn.functional.interpolate).");
  m.def(
      "nn_functional_upsample",
      [](nb::handle input, nb::handle size, nb::handle scale_factor, const std::string& mode,
         std::optional<bool> align_corners) {
        return interpolate_py(input, size, scale_factor, mode, align_corners, std::nullopt, false);
      },
      "input"_a, "size"_a = nb::none(), "scale_factor"_a = nb::none(), "mode"_a = "nearest",
      "align_corners"_a = nb::none(), "interpolate under its older name (torch.nn.functional.upsample).");
  m.def(
      "nn_functional_upsample_nearest",
      [](nb::handle input, nb::handle size, nb::handle scale_factor) {
        return interpolate_py(input, size, scale_factor, "nearest", std::nullopt, std::nullopt, false);
      },
      "input"_a, "size"_a = nb::none(), "scale_factor"_a = nb::none(), "interpolate with mode='nearest'.");
  m.def(
      "nn_functional_upsample_bilinear",
      [](nb::handle input, nb::handle size, nb::handle scale_factor) {
        return interpolate_py(input, size, scale_factor, "bilinear", true, std::nullopt, false);
      },
      "input"_a, "size"_a = nb::none(), "scale_factor"_a = nb::none(),
      "interpolate with mode='bilinear' and align_corners=True.");
  m.def(
      "nn_functional_grid_sample",
      [](nb::handle input, nb::handle grid, const std::string& mode, const std::string& padding_mode,
         std::optional<bool> align_corners) {
        return kiln::grid_sample(to_tensor(input), to_tensor(grid), mode, padding_mode,
                                 align_corners.value_or(false));
      },
      "input"_a, "grid"_a, "mode"_a = "bilinear", "padding_mode"_a = "zeros", "align_corners"_a = nb::none(),
      "Samples [N, C, H, W] input at grid [N, Ho, Wo, 2] of (x, y) in [-1, 1] (5-d: [N, Do, Ho, Wo, 3] of "
      "(x, y, z)); torch.nn.functional.grid_sample.");
}
