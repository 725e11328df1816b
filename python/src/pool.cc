// kiln.nn.functional pooling with torch's names and keywords: max_pool1d/2d/3d
// (return_indices gives (values, indices)), max_pool*_with_indices,
// avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d/3d,
// fractional_max_pool2d/3d.
#include "kiln/pool.h"

#include <nanobind/stl/pair.h>

#include <string>
#include <vector>

#include "bind_util.h"
#include "kiln/random.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// An int, or a sequence of ints (one applies to every dim), as a list. None or
// an empty sequence gives an empty list (stride: the kernel size).
std::vector<int64_t> int_list(nb::handle h, const std::string& op, const char* what) {
  if (h.is_none()) return {};
  if (PyIndex_Check(h.ptr())) return {to_int64(h, op.c_str(), what)};
  std::vector<int64_t> v;
  for (nb::handle e : nb::iter(h)) v.push_back(to_int64(e, op.c_str(), what));
  return v;
}

// kernel_size as nd entries (an int repeats; a sequence must have nd entries).
std::vector<int64_t> kernel_list(nb::handle h, int nd, const std::string& op) {
  std::vector<int64_t> v = int_list(h, op, "kernel_size");
  if (v.size() == 1) v.assign(size_t(nd), v[0]);
  if (int(v.size()) != nd)
    throw ValueError("[" + op + "] kernel_size must be an int or a tuple of " + std::to_string(nd) + " ints");
  return v;
}

// output_size as nd entries; None (or a None entry) keeps the input's size.
std::vector<int64_t> output_list(const Tensor& x, nb::handle h, int nd, const std::string& op) {
  std::vector<nb::handle> items;
  if (h.is_none() || PyIndex_Check(h.ptr())) {
    items.assign(size_t(nd), h);
  } else {
    for (nb::handle e : nb::iter(h)) items.push_back(e);
    if (items.size() == 1) items.assign(size_t(nd), items[0]);
  }
  if (int(items.size()) != nd)
    throw ValueError("[" + op + "] output_size must be an int or a tuple of " + std::to_string(nd) + " ints");
  std::vector<int64_t> v;
  for (int i = 0; i < nd; ++i) {
    const nb::handle e = items[size_t(i)];
    v.push_back(e.is_none() ? (x.dim() >= nd ? x.size(x.dim() - nd + i) : 0)
                            : to_int64(e, op.c_str(), "output_size"));
  }
  return v;
}

nb::object values_or_pair(const PoolResult& r, bool return_indices) {
  if (return_indices) return nb::cast(std::make_pair(r.values, r.indices));
  return nb::cast(r.values);
}

void def_pools(nb::module_& m, int nd) {
  const std::string d = std::to_string(nd) + "d";
  auto max_fn = [nd](const std::string& op, bool always_pair) {
    return [nd, op, always_pair](nb::handle x, nb::handle k, nb::handle stride, nb::handle padding,
                                 nb::handle dilation, bool ceil_mode, bool return_indices) {
      const PoolResult r = max_pool_with_indices(
          to_tensor(x), kernel_list(k, nd, op), int_list(stride, op, "stride"),
          int_list(padding, op, "padding"), int_list(dilation, op, "dilation"), ceil_mode);
      return values_or_pair(r, always_pair || return_indices);
    };
  };
  for (bool with : {false, true}) {
    const std::string name = "max_pool" + d + (with ? "_with_indices" : "");
    m.def(("nn_functional_" + name).c_str(), max_fn(name, with), "input"_a, "kernel_size"_a,
          "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1, "ceil_mode"_a = false,
          "return_indices"_a = false, ("torch.nn.functional." + name).c_str());
  }
  const std::string avg = "avg_pool" + d;
  auto avg_fn = [nd, avg](nb::handle x, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode,
                          bool count_include_pad, std::optional<int64_t> divisor_override) {
    return avg_pool(to_tensor(x), kernel_list(k, nd, avg), int_list(stride, avg, "stride"),
                    int_list(padding, avg, "padding"), ceil_mode, count_include_pad, divisor_override);
  };
  if (nd == 1) {  // torch's avg_pool1d has no divisor_override
    m.def(("nn_functional_" + avg).c_str(),
          [avg_fn](nb::handle x, nb::handle k, nb::handle stride, nb::handle padding, bool ceil_mode,
                   bool count_include_pad) {
            return avg_fn(x, k, stride, padding, ceil_mode, count_include_pad, {});
          },
          "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true, "torch.nn.functional.avg_pool1d");
  } else {
    m.def(("nn_functional_" + avg).c_str(), avg_fn, "input"_a, "kernel_size"_a, "stride"_a = nb::none(),
          "padding"_a = 0, "ceil_mode"_a = false, "count_include_pad"_a = true,
          "divisor_override"_a = nb::none(), ("torch.nn.functional." + avg).c_str());
  }
  const std::string aavg = "adaptive_avg_pool" + d, amax = "adaptive_max_pool" + d;
  m.def(("nn_functional_" + aavg).c_str(),
        [nd, aavg](nb::handle x, nb::handle output_size) {
          const Tensor t = to_tensor(x);
          return adaptive_avg_pool(t, output_list(t, output_size, nd, aavg));
        },
        "input"_a, "output_size"_a, ("torch.nn.functional." + aavg).c_str());
  m.def(("nn_functional_" + amax).c_str(),
        [nd, amax](nb::handle x, nb::handle output_size, bool return_indices) {
          const Tensor t = to_tensor(x);
          return values_or_pair(adaptive_max_pool(t, output_list(t, output_size, nd, amax)), return_indices);
        },
        "input"_a, "output_size"_a, "return_indices"_a = false, ("torch.nn.functional." + amax).c_str());
}

// output_ratio: a float or nd floats in (0, 1); each output size is
// int(input size * ratio), as torch.
std::vector<int64_t> ratio_sizes(const Tensor& x, nb::handle h, int nd, const std::string& op) {
  std::vector<double> r;
  if (PyNumber_Check(h.ptr()) && !PySequence_Check(h.ptr())) {
    r.assign(size_t(nd), PyFloat_AsDouble(h.ptr()));
  } else {
    for (nb::handle e : nb::iter(h)) r.push_back(PyFloat_AsDouble(e.ptr()));
  }
  if (PyErr_Occurred()) throw nb::python_error();
  if (int(r.size()) != nd)
    throw ValueError("[" + op + "] output_ratio must be a float or a tuple of " + std::to_string(nd) +
                     " floats");
  std::vector<int64_t> v;
  for (int i = 0; i < nd; ++i) {
    KILN_CHECK(r[size_t(i)] > 0 && r[size_t(i)] < 1, ValueError,
               "[" << op << "] output_ratio must be between 0 and 1, got " << r[size_t(i)]);
    v.push_back(x.dim() >= nd ? int64_t(double(x.size(x.dim() - nd + i)) * r[size_t(i)]) : 0);
  }
  return v;
}

void def_fractional(nb::module_& m, int nd) {
  const std::string op = "fractional_max_pool" + std::to_string(nd) + "d";
  m.def(("nn_functional_" + op).c_str(),
        [nd, op](nb::handle input, nb::handle kernel_size, nb::handle output_size, nb::handle output_ratio,
                 bool return_indices, nb::handle random_samples) {
          const Tensor x = to_tensor(input);
          KILN_CHECK(!output_size.is_none() || !output_ratio.is_none(), ValueError,
                     "[" << op << "] requires specifying either an output_size or an output_ratio");
          const std::vector<int64_t> out = output_size.is_none() ? ratio_sizes(x, output_ratio, nd, op)
                                                                 : output_list(x, output_size, nd, op);
          Tensor u;
          if (!random_samples.is_none()) {
            u = to_tensor(random_samples);
          } else if (x.dim() == nd + 1 || x.dim() == nd + 2) {
            const int64_t batch = x.dim() == nd + 2 ? x.size(0) : 1;
            const DType d = x.dtype();  // torch draws in the input's dtype
            const bool own = d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
            u = rand({batch, x.size(x.dim() - nd - 1), nd}, own ? d : DType::Float32, nullptr, x.device());
          }
          return values_or_pair(fractional_max_pool(x, kernel_list(kernel_size, nd, op), out, u),
                                return_indices);
        },
        "input"_a, "kernel_size"_a, "output_size"_a = nb::none(), "output_ratio"_a = nb::none(),
        "return_indices"_a = false, "_random_samples"_a = nb::none(),
        ("torch.nn.functional." + op + ": max pooling over pseudo-random windows (Graham 2014).").c_str());
}

}  // namespace
}  // namespace kiln::py

void init_pool(nb::module_& m) {
  for (int nd = 1; nd <= 3; ++nd) kiln::py::def_pools(m, nd);
  for (int nd = 2; nd <= 3; ++nd) kiln::py::def_fractional(m, nd);
}
