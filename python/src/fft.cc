// kiln.fft: bound as _C.fft_<name>, seen as kiln.fft.<name>, with torch.fft's
// signatures: (input, n=None, dim=-1, norm=None, *, out=None) for the one-dim
// transforms, (input, s=None, dim=(-2, -1), ...) for the 2-d ones,
// (input, s=None, dim=None, ...) for the n-d ones, and the fftfreq / fftshift
// helpers.
#include "kiln/fft.h"

#include <string>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

std::string_view norm_of(nb::handle h, const char* op) {
  const std::optional<std::string_view> s = optional_utf8(h, op, "norm");
  return s ? *s : std::string_view();
}

// s=: None, an int, or a sequence of ints (-1 keeps the input's size).
fft::OptSizes sizes_of(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  std::vector<int64_t> s;
  if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()) && !is_tensor(h)) {
    s.push_back(to_int64(h, op, "s"));
    return s;
  }
  KILN_CHECK(PySequence_Check(h.ptr()), TypeError,
             "[" << op << "] expected an int or a sequence of ints for s, got " << py_repr(h));
  nb::object seq = nb::borrow(h);
  for (size_t i = 0, n = nb::len(h); i < n; ++i) s.push_back(to_int64(seq[i], op, "s"));
  return s;
}

using OneDim = Tensor (*)(const Tensor&, fft::OptSize, int, std::string_view);
using TwoDim = Tensor (*)(const Tensor&, fft::OptSizes, std::vector<int>, std::string_view);
using NDim = Tensor (*)(const Tensor&, fft::OptSizes, fft::OptDims, std::string_view);

}  // namespace
}  // namespace kiln::py

void init_fft(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  struct One {
    const char* name;
    OneDim fn;
  };
  for (const One& f : {One{"fft", &fft::fft}, One{"ifft", &fft::ifft}, One{"rfft", &fft::rfft},
                       One{"irfft", &fft::irfft}, One{"hfft", &fft::hfft}, One{"ihfft", &fft::ihfft}}) {
    const std::string op = std::string("fft.") + f.name;
    m.def((std::string("fft_") + f.name).c_str(),
          [f, op](nb::handle input, std::optional<int64_t> n, int dim, nb::handle norm, nb::handle out) {
            return result_or_out(op.c_str(), f.fn(to_tensor(input), n, dim, norm_of(norm, op.c_str())), out);
          },
          "input"_a, "n"_a = nb::none(), "dim"_a = -1, "norm"_a = nb::none(), nb::kw_only(),
          "out"_a = nb::none());
  }
  struct Two {
    const char* name;
    TwoDim two;
    NDim nd;
  };
  for (const Two& f : {Two{"fft", &fft::fft2, &fft::fftn}, Two{"ifft", &fft::ifft2, &fft::ifftn},
                       Two{"rfft", &fft::rfft2, &fft::rfftn}, Two{"irfft", &fft::irfft2, &fft::irfftn},
                       Two{"hfft", &fft::hfft2, &fft::hfftn}, Two{"ihfft", &fft::ihfft2, &fft::ihfftn}}) {
    const std::string op2 = std::string("fft.") + f.name + "2", opn = std::string("fft.") + f.name + "n";
    m.def(
        (std::string("fft_") + f.name + "2").c_str(),
        [f, op2](nb::handle input, nb::handle s, nb::handle dim, nb::handle norm, nb::handle out) {
          const char* op = op2.c_str();
          const std::optional<std::vector<int>> dims = to_dims(dim, op);
          KILN_CHECK(dims.has_value(), TypeError, "[" << op << "] dim must be a sequence of ints, got None");
          return result_or_out(op, f.two(to_tensor(input), sizes_of(s, op), *dims, norm_of(norm, op)), out);
        },
        "input"_a, "s"_a = nb::none(), "dim"_a = nb::make_tuple(-2, -1), "norm"_a = nb::none(), nb::kw_only(),
        "out"_a = nb::none());
    m.def((std::string("fft_") + f.name + "n").c_str(),
          [f, opn](nb::handle input, nb::handle s, nb::handle dim, nb::handle norm, nb::handle out) {
            const char* op = opn.c_str();
            return result_or_out(
                op, f.nd(to_tensor(input), sizes_of(s, op), to_dims(dim, op), norm_of(norm, op)), out);
          },
          "input"_a, "s"_a = nb::none(), "dim"_a = nb::none(), "norm"_a = nb::none(), nb::kw_only(),
          "out"_a = nb::none());
  }
  using Freq = Tensor (*)(int64_t, double, DType, Device);
  for (auto [name, fn] : {std::pair<const char*, Freq>{"fftfreq", &fft::fftfreq},
                          std::pair<const char*, Freq>{"rfftfreq", &fft::rfftfreq}}) {
    const std::string op = std::string("fft.") + name;
    m.def((std::string("fft_") + name).c_str(),
          [fn, op](int64_t n, double d, nb::handle out, std::optional<DType> dtype, nb::handle device,
                   bool requires_grad) {
            const Device dev = check_device(device, op.c_str());
            Tensor r = fn(n, d, dtype.value_or(kDefaultFloat), dev);
            if (requires_grad) r.requires_grad_(true);
            return result_or_out(op.c_str(), std::move(r), out);
          },
          "n"_a, "d"_a = 1.0, nb::kw_only(), "out"_a = nb::none(), "dtype"_a = nb::none(),
          "device"_a = nb::none(), "requires_grad"_a = false);
  }
  using Shift = Tensor (*)(const Tensor&, fft::OptDims);
  for (auto [name, fn] : {std::pair<const char*, Shift>{"fftshift", &fft::fftshift},
                          std::pair<const char*, Shift>{"ifftshift", &fft::ifftshift}}) {
    const std::string op = std::string("fft.") + name;
    m.def(
        (std::string("fft_") + name).c_str(),
        [fn, op](nb::handle input, nb::handle dim) { return fn(to_tensor(input), to_dims(dim, op.c_str())); },
        "input"_a, "dim"_a = nb::none());
  }
}
