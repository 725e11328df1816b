// Factories (empty, zeros, ones, full, arange, linspace, logspace, eye, the *_like
// family, tensor), random numbers (rand, randn, randint, Generator, manual_seed).
#include "bind_util.h"
#include "memory_format.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

Generator* gen_ptr(std::optional<Generator*> g) { return g ? *g : nullptr; }

// The float dtype of rand/randn/linspace-style factories, validated.
DType float_dtype(std::optional<DType> d, const char* op) {
  const DType r = d.value_or(kDefaultFloat);
  return r;
}

std::string u128_string(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

[[noreturn]] void throw_oom(const char* op, unsigned __int128 bytes, const Shape& shape, DType d,
                            const char* why) {
  throw OutOfMemoryError(std::string("[") + op + "] cannot allocate " + u128_string(bytes) +
                             " bytes (shape " + shape_to_string(shape) + ", dtype " + name(d) + "): " + why,
                         bytes > SIZE_MAX ? SIZE_MAX : size_t(bytes));
}

// Runs factory f, which allocates `shape` of dtype d, so that every size error names
// the factory: ValueError for a negative size, OverflowError for an element count past
// int64, MemoryError "[op] cannot allocate N bytes (shape [..], dtype ..): out of
// memory" for a request the system refuses (or no address space holds).
template <typename F>
Tensor allocating(const char* op, const Shape& shape, DType d, F&& f) {
  bool zero = false;
  for (int64_t s : shape) {
    if (s < 0)
      throw ValueError(std::string("[") + op + "] negative dimension in shape " + shape_to_string(shape));
    zero |= s == 0;
  }
  int64_t n = 1;
  if (!zero)
    for (int64_t s : shape)
      if (__builtin_mul_overflow(n, s, &n))
        throw OverflowError(std::string("[") + op + "] shape " + shape_to_string(shape) +
                            " has more elements than int64 can count");
  const unsigned __int128 bytes = (unsigned __int128)n * itemsize(d);
  if (bytes > (unsigned __int128)(uint64_t(1) << 62))
    throw_oom(op, bytes, shape, d, "larger than any address space");
  try {
    return f();
  } catch (const OutOfMemoryError&) {
    throw_oom(op, bytes, shape, d, "out of memory");
  }
}

// The device a *_like factory allocates on: the one given, else t's (torch).
Device like_device(const Tensor& t, nb::handle device, const char* op) {
  return device.is_none() ? t.device() : check_device(device, op);
}

// memory_format= as torch: preserve_format (the default) keeps t's layout.
Tensor like(const Tensor& t, std::optional<DType> dtype, nb::handle device, const char* op,
            nb::handle memory_format = nb::none()) {
  const Device dev = like_device(t, device, op);
  const DType d = dtype.value_or(t.dtype());
  const MemoryFormat f = to_memory_format(memory_format, op);
  return allocating(op, t.sizes(), d, [&] { return empty_like(t, d, dev, f); });
}

// r (row-major, of t's shape) laid out as memory_format= says for a *_like of t:
// preserve_format (the default) keeps t's layout, as empty_like(t).
Tensor laid_out_like(const Tensor& t, Tensor r, const char* op, nb::handle memory_format) {
  const MemoryFormat f = to_memory_format(memory_format, op);
  if (f == MemoryFormat::Contiguous || (f == MemoryFormat::Preserve && t.is_contiguous())) return r;
  Tensor out = empty_like(t, r.dtype(), r.device(), f);
  out.copy_(r);
  return out;
}

// A range bound: a real number (complex bounds are refused, as torch).
double real_bound(nb::handle h, const char* op, const char* what) {
  const Scalar s = to_scalar(h, op);
  if (s.is_complex()) throw TypeError(std::string("[") + op + "] " + what + " must be real, got " + s.str());
  return s.to_double();
}

// A seed in [-2^63, 2^64): negative seeds wrap to uint64, as torch.manual_seed.
uint64_t to_seed(nb::handle h, const char* op) {
  if (!PyIndex_Check(h.ptr()) || PyBool_Check(h.ptr()))
    throw TypeError(std::string("[") + op + "] seed must be an int, got " + py_type_name(h));
  const Scalar s = to_scalar(nb::int_(h), op);
  return s.above_int64() ? s.to<uint64_t>() : uint64_t(s.to_int64());
}

// The requires_grad= keyword of every factory (torch's): the new tensor is a leaf
// that requires grad.
Tensor leaf(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor empty_checked(const char* op, const Shape& shape, DType d) {
  return allocating(op, shape, d, [&] { return empty(shape, d); });
}

void init_factories(nb::module_& m) {
  // ---- shape factories: f(*size, dtype=None, device=None) ----
  m.def(
      "empty",
      [](nb::args size, std::optional<DType> dtype, nb::handle device, bool requires_grad,
         nb::handle memory_format) {
        const Device dev = check_device(device, "empty");
        const Shape shape = shape_from_args(size, "empty");
        const DType d = dtype.value_or(kDefaultFloat);
        const MemoryFormat f = to_memory_format(memory_format, "empty", MemoryFormat::Contiguous);
        return leaf(allocating("empty", shape, d, [&] { return empty(shape, d, dev, f); }), requires_grad);
      },
      "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "memory_format"_a = nb::none(), "An uninitialized tensor of the given size.");
  m.def(
      "zeros",
      [](nb::args size, std::optional<DType> dtype, nb::handle device, bool requires_grad) {
        const Device dev = check_device(device, "zeros");
        const Shape shape = shape_from_args(size, "zeros");
        const DType d = dtype.value_or(kDefaultFloat);
        return leaf(allocating("zeros", shape, d, [&] { return zeros(shape, d, dev); }), requires_grad);
      },
      "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "ones",
      [](nb::args size, std::optional<DType> dtype, nb::handle device, bool requires_grad) {
        const Device dev = check_device(device, "ones");
        const Shape shape = shape_from_args(size, "ones");
        const DType d = dtype.value_or(kDefaultFloat);
        return leaf(allocating("ones", shape, d, [&] { return ones(shape, d, dev); }), requires_grad);
      },
      "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "full",
      [](nb::handle size, nb::handle fill_value, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "full");
        const Shape shape = to_shape(size, "full");
        Scalar v;
        DType d;
        if (is_tensor(fill_value)) {
          const Tensor& t = nb::cast<const Tensor&>(fill_value);
          if (t.dim() != 0) throw ValueError("[full] fill_value must be a number or a 0-dim tensor");
          v = t.item();
          d = dtype.value_or(t.dtype());
        } else {
          v = to_scalar(fill_value, "full");
          d = dtype.value_or(v.promotion_dtype());
          check_fits(v, d, "full", "fill_value");
        }
        return leaf(allocating("full", shape, d, [&] { return full(shape, v, d, dev); }), requires_grad);
      },
      "size"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false,
      "A tensor filled with fill_value; the dtype follows the value (bool, int64, float32, complex64) unless "
      "given.");

  // ---- *_like ----
  m.def(
      "empty_like",
      [](const Tensor& t, std::optional<DType> dtype, nb::handle device, bool requires_grad, nb::handle mf) {
        return leaf(like(t, dtype, device, "empty_like", mf), requires_grad);
      },
      "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "memory_format"_a = nb::none());
  m.def(
      "zeros_like",
      [](const Tensor& t, std::optional<DType> dtype, nb::handle device, bool requires_grad, nb::handle mf) {
        return leaf(like(t, dtype, device, "zeros_like", mf).fill_(Scalar(int64_t(0))), requires_grad);
      },
      "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "memory_format"_a = nb::none());
  m.def(
      "ones_like",
      [](const Tensor& t, std::optional<DType> dtype, nb::handle device, bool requires_grad, nb::handle mf) {
        return leaf(like(t, dtype, device, "ones_like", mf).fill_(Scalar(int64_t(1))), requires_grad);
      },
      "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "memory_format"_a = nb::none());
  m.def(
      "full_like",
      [](const Tensor& t, nb::handle fill_value, std::optional<DType> dtype, nb::handle device,
         bool requires_grad, nb::handle mf) {
        const Scalar v = to_scalar(fill_value, "full_like");
        check_fits(v, dtype.value_or(t.dtype()), "full_like", "fill_value");
        return leaf(like(t, dtype, device, "full_like", mf).fill_(v), requires_grad);
      },
      "input"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "memory_format"_a = nb::none());
  m.def(
      "rand_like",
      [](const Tensor& t, std::optional<DType> dtype, std::optional<Generator*> g, nb::handle device,
         bool requires_grad, nb::handle mf) {
        const Device dev = like_device(t, device, "rand_like");
        const DType d = dtype.value_or(t.dtype());
        const Tensor r =
            allocating("rand_like", t.sizes(), d, [&] { return rand(t.sizes(), d, gen_ptr(g), dev); });
        // The values are drawn in row-major order, then laid out as memory_format says.
        return leaf(laid_out_like(t, r, "rand_like", mf), requires_grad);
      },
      "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "generator"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "memory_format"_a = nb::none());
  m.def(
      "randn_like",
      [](const Tensor& t, std::optional<DType> dtype, std::optional<Generator*> g, nb::handle device,
         bool requires_grad, nb::handle mf) {
        const Device dev = like_device(t, device, "randn_like");
        const DType d = dtype.value_or(t.dtype());
        const Tensor r =
            allocating("randn_like", t.sizes(), d, [&] { return randn(t.sizes(), d, gen_ptr(g), dev); });
        // The values are drawn in row-major order, then laid out as memory_format says.
        return leaf(laid_out_like(t, r, "randn_like", mf), requires_grad);
      },
      "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "generator"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "memory_format"_a = nb::none());

  // ---- ranges ----
  m.def(
      "arange",
      [](nb::handle start, nb::handle end, nb::handle step, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "arange");
        Scalar s = to_scalar(start, "arange"), e;
        if (!end.is_none()) {
          e = to_scalar(end, "arange");
        } else {
          e = s;
          s = Scalar(int64_t(0));
        }
        const Scalar st = to_scalar(step, "arange");
        const bool all_int = s.is_integral() && e.is_integral() && st.is_integral();
        const DType d = dtype.value_or(all_int ? DType::Int64 : kDefaultFloat);
        // torch converts the bounds, checked, to the type arange accumulates in: int64 for
        // integer dtypes (arange(2**63) overflows; arange(0, 300, dtype=uint8) wraps as in torch).
        if (is_integral(d, false)) {
          check_fits(s, DType::Int64, "arange", "start");
          check_fits(e, DType::Int64, "arange", "end");
          check_fits(st, DType::Int64, "arange", "step");
        }
        try {
          return leaf(arange(s, e, st, d, dev), requires_grad);
        } catch (const OutOfMemoryError& x) {
          throw_oom("arange", x.bytes(), {int64_t(x.bytes() / itemsize(d))}, d, "out of memory");
        }
      },
      "start"_a, "end"_a = nb::none(), "step"_a = 1, nb::kw_only(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false,
      "Values from start to end (exclusive) by step; int64 when all bounds are integers, else float32.");
  m.def(
      "linspace",
      [](nb::handle start, nb::handle end, nb::handle steps, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "linspace");
        const double a = real_bound(start, "linspace", "start"), b = real_bound(end, "linspace", "end");
        const int64_t n = to_int64(steps, "linspace", "steps");
        const DType d = float_dtype(dtype, "linspace");
        return leaf(
            allocating("linspace", {std::max<int64_t>(n, 0)}, d, [&] { return linspace(a, b, n, d, dev); }),
            requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);
  m.def(
      "logspace",
      [](nb::handle start, nb::handle end, nb::handle steps, double base, std::optional<DType> dtype,
         nb::handle device, bool requires_grad) {
        const Device dev = check_device(device, "logspace");
        const double a = real_bound(start, "logspace", "start"), b = real_bound(end, "logspace", "end");
        const int64_t n = to_int64(steps, "logspace", "steps");
        const DType d = float_dtype(dtype, "logspace");
        return leaf(allocating("logspace", {std::max<int64_t>(n, 0)}, d,
                               [&] { return logspace(a, b, n, base, d, dev); }),
                    requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, "base"_a = 10.0, nb::kw_only(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false);
  m.def(
      "eye",
      [](nb::handle n_arg, nb::handle m_arg, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "eye");
        const int64_t n = to_int64(n_arg, "eye", "n");
        const int64_t mcols = m_arg.is_none() ? n : to_int64(m_arg, "eye", "m");
        if (n < 0) throw ValueError("[eye] n must be greater or equal to 0, got " + std::to_string(n));
        if (mcols < 0)
          throw ValueError("[eye] m must be greater or equal to 0, got " + std::to_string(mcols));
        const DType d = dtype.value_or(kDefaultFloat);
        return leaf(allocating("eye", {n, mcols}, d, [&] { return eye(n, mcols, d, dev); }), requires_grad);
      },
      "n"_a, "m"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false);

  // ---- from data ----
  m.def(
      "tensor",
      [](nb::handle data, std::optional<DType> dtype, nb::handle device, bool requires_grad) {
        const Device dev = check_device(device, "tensor");
        return leaf(tensor_from_data(data, dtype).to(dev), requires_grad);
      },
      "data"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "A new tensor copied from data (nested lists of numbers, a number, a NumPy array or a "
      "tensor). Inferred dtype: bool, int64, float32 or complex64; NumPy arrays keep theirs.");
  m.def("as_tensor", [](nb::handle data, std::optional<DType> dtype, nb::handle device) {
    Tensor t = is_tensor(data) || is_numpy_array(data) ? to_tensor(data) : tensor_from_data(data, dtype);
    if (!device.is_none()) t = t.to(check_device(device, "as_tensor"));
    return dtype ? t.to(*dtype) : t;
  }, "data"_a, "dtype"_a = nb::none(), nb::kw_only(), "device"_a = nb::none(),
     "Like tensor(), but shares memory with a kiln.Tensor or NumPy array when the dtype matches.");

  // ---- random ----
  nb::class_<Generator>(m, "Generator", "A Philox random-number stream (torch.Generator).")
      .def(
          "__init__",
          [](Generator* g, nb::handle seed) {
            new (g) Generator(seed.is_none() ? 67280421310721ull : to_seed(seed, "Generator"));
          },
          "seed"_a = nb::none())
      .def(
          "manual_seed",
          [](Generator& g, nb::handle seed) -> Generator& {
            g.manual_seed(to_seed(seed, "manual_seed"));
            return g;
          },
          "seed"_a, nb::rv_policy::reference)
      .def("initial_seed", &Generator::initial_seed)
      .def("seed", [](Generator& g) { return g.initial_seed(); });
  m.attr("default_generator") = nb::cast(&default_generator(), nb::rv_policy::reference);
  m.def(
      "manual_seed",
      [](nb::handle seed) -> Generator& {
        manual_seed(to_seed(seed, "manual_seed"));
        return default_generator();
      },
      "seed"_a, nb::rv_policy::reference, "Seeds the default generator; returns it.");
  m.def("initial_seed", [] { return default_generator().initial_seed(); });

  m.def(
      "rand",
      [](nb::args size, std::optional<Generator*> g, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "rand");
        const Shape shape = shape_from_args(size, "rand");
        const DType d = float_dtype(dtype, "rand");
        return leaf(allocating("rand", shape, d, [&] { return rand(shape, d, gen_ptr(g), dev); }),
                    requires_grad);
      },
      "size"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "Uniform samples in [0, 1).");
  m.def(
      "randn",
      [](nb::args size, std::optional<Generator*> g, std::optional<DType> dtype, nb::handle device,
         bool requires_grad) {
        const Device dev = check_device(device, "randn");
        const Shape shape = shape_from_args(size, "randn");
        const DType d = float_dtype(dtype, "randn");
        return leaf(allocating("randn", shape, d, [&] { return randn(shape, d, gen_ptr(g), dev); }),
                    requires_grad);
      },
      "size"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "Standard normal samples.");
  // randint(low=0, high, size): the two- and three-argument forms, as torch.
  m.def(
      "randint",
      [](nb::args args, nb::handle size, std::optional<Generator*> g, std::optional<DType> dtype,
         nb::handle device, bool requires_grad) {
        const Device dev = check_device(device, "randint");
        int64_t low = 0, high;
        nb::handle sz = size;
        const size_t n = args.size();
        auto bound = [](nb::handle h, const char* what) { return to_int64(h, "randint", what); };
        if (n == 3 && sz.is_none()) {
          low = bound(args[0], "low");
          high = bound(args[1], "high");
          sz = args[2];
        } else if (n == 2 && sz.is_none()) {
          high = bound(args[0], "high");
          sz = args[1];
        } else if (n == 2) {
          low = bound(args[0], "low");
          high = bound(args[1], "high");
        } else if (n == 1 && !sz.is_none()) {
          high = bound(args[0], "high");
        } else {
          throw TypeError("[randint] expected randint(low=0, high, size)");
        }
        const DType d = dtype.value_or(DType::Int64);
        // As torch: an integer dtype must hold low and high - 1.
        if (is_integral(d, false) && high > low) {
          check_fits(Scalar(low), d, "randint", "low");
          check_fits(Scalar(high - 1), d, "randint", "high - 1 =");
        }
        const Shape shape = to_shape(sz, "randint");
        return leaf(
            allocating("randint", shape, d, [&] { return randint(low, high, shape, d, gen_ptr(g), dev); }),
            requires_grad);
      },
      "args"_a, nb::kw_only(), "size"_a = nb::none(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
      "device"_a = nb::none(), "requires_grad"_a = false, "Integers uniform in [low, high).");
}

}  // namespace kiln::py
