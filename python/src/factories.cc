// Factories (empty, zeros, ones, full, arange, linspace, logspace, eye, the *_like
// family, tensor), random numbers (rand, randn, randint, Generator, manual_seed).
#include "bind_util.h"

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

Tensor like(const Tensor& t, std::optional<DType> dtype, nb::handle device, const char* op) {
  check_device(device, op);
  return empty(t.sizes(), dtype.value_or(t.dtype()));
}

}  // namespace

void init_factories(nb::module_& m) {
  // ---- shape factories: f(*size, dtype=None, device=None) ----
  m.def("empty", [](nb::args size, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "empty");
    return empty(shape_from_args(size), dtype.value_or(kDefaultFloat));
  }, "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
     "An uninitialized tensor of the given size.");
  m.def("zeros", [](nb::args size, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "zeros");
    return zeros(shape_from_args(size), dtype.value_or(kDefaultFloat));
  }, "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("ones", [](nb::args size, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "ones");
    return ones(shape_from_args(size), dtype.value_or(kDefaultFloat));
  }, "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("full", [](nb::handle size, nb::handle fill_value, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "full");
    const Shape shape = to_shape(size);
    Scalar v;
    if (is_tensor(fill_value)) {
      const Tensor& t = nb::cast<const Tensor&>(fill_value);
      if (t.dim() != 0) throw ValueError("[full] fill_value must be a number or a 0-dim tensor");
      v = t.item();
      return full(shape, v, dtype.value_or(t.dtype()));
    }
    v = to_scalar(fill_value);
    return dtype ? full(shape, v, *dtype) : full(shape, v);
  }, "size"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
     "A tensor filled with fill_value; the dtype follows the value (bool, int64, float32, complex64) unless given.");

  // ---- *_like ----
  m.def("empty_like", [](const Tensor& t, std::optional<DType> dtype, nb::handle device) {
    return like(t, dtype, device, "empty_like");
  }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("zeros_like", [](const Tensor& t, std::optional<DType> dtype, nb::handle device) {
    return like(t, dtype, device, "zeros_like").fill_(Scalar(int64_t(0)));
  }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("ones_like", [](const Tensor& t, std::optional<DType> dtype, nb::handle device) {
    return like(t, dtype, device, "ones_like").fill_(Scalar(int64_t(1)));
  }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("full_like", [](const Tensor& t, Scalar value, std::optional<DType> dtype, nb::handle device) {
    return like(t, dtype, device, "full_like").fill_(value);
  }, "input"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("rand_like", [](const Tensor& t, std::optional<DType> dtype, std::optional<Generator*> g) {
    return rand(t.sizes(), dtype.value_or(t.dtype()), gen_ptr(g));
  }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "generator"_a = nb::none());
  m.def("randn_like", [](const Tensor& t, std::optional<DType> dtype, std::optional<Generator*> g) {
    return randn(t.sizes(), dtype.value_or(t.dtype()), gen_ptr(g));
  }, "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "generator"_a = nb::none());

  // ---- ranges ----
  m.def("arange", [](Scalar start, std::optional<Scalar> end, Scalar step, std::optional<DType> dtype,
                     nb::handle device) {
    check_device(device, "arange");
    Scalar s = start, e;
    if (end) {
      e = *end;
    } else {
      e = start;
      s = Scalar(int64_t(0));
    }
    return dtype ? arange(s, e, step, *dtype) : arange(s, e, step);
  }, "start"_a, "end"_a = nb::none(), "step"_a = 1, nb::kw_only(), "dtype"_a = nb::none(),
     "device"_a = nb::none(),
     "Values from start to end (exclusive) by step; int64 when all bounds are integers, else float32.");
  m.def("linspace", [](double start, double end, int64_t steps, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "linspace");
    return linspace(start, end, steps, float_dtype(dtype, "linspace"));
  }, "start"_a, "end"_a, "steps"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());
  m.def("logspace", [](double start, double end, int64_t steps, double base, std::optional<DType> dtype,
                       nb::handle device) {
    check_device(device, "logspace");
    return logspace(start, end, steps, base, float_dtype(dtype, "logspace"));
  }, "start"_a, "end"_a, "steps"_a, "base"_a = 10.0, nb::kw_only(), "dtype"_a = nb::none(),
     "device"_a = nb::none());
  m.def("eye", [](int64_t n, std::optional<int64_t> mcols, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "eye");
    if (mcols && *mcols < 0)
      throw ValueError("[eye] m must be greater or equal to 0, got " + std::to_string(*mcols));
    return eye(n, mcols.value_or(-1), dtype.value_or(kDefaultFloat));
  }, "n"_a, "m"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none());

  // ---- from data ----
  m.def("tensor", [](nb::handle data, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "tensor");
    return tensor_from_data(data, dtype);
  }, "data"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
     "A new tensor copied from data (nested lists of numbers, a number, a NumPy array or a "
     "tensor). Inferred dtype: bool, int64, float32 or complex64; NumPy arrays keep theirs.");
  m.def("as_tensor", [](nb::handle data, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "as_tensor");
    Tensor t = is_tensor(data) || is_numpy_array(data) ? to_tensor(data) : tensor_from_data(data, dtype);
    return dtype ? t.to(*dtype) : t;
  }, "data"_a, "dtype"_a = nb::none(), nb::kw_only(), "device"_a = nb::none(),
     "Like tensor(), but shares memory with a kiln.Tensor or NumPy array when the dtype matches.");

  // ---- random ----
  nb::class_<Generator>(m, "Generator", "A Philox random-number stream (torch.Generator).")
      .def(nb::init<uint64_t>(), "seed"_a = 67280421310721ull)
      .def("manual_seed", [](Generator& g, uint64_t seed) -> Generator& {
        g.manual_seed(seed);
        return g;
      }, "seed"_a, nb::rv_policy::reference)
      .def("initial_seed", &Generator::initial_seed)
      .def("seed", [](Generator& g) { return g.initial_seed(); });
  m.attr("default_generator") = nb::cast(&default_generator(), nb::rv_policy::reference);
  m.def("manual_seed", [](uint64_t seed) -> Generator& {
    manual_seed(seed);
    return default_generator();
  }, "seed"_a, nb::rv_policy::reference, "Seeds the default generator; returns it.");
  m.def("initial_seed", [] { return default_generator().initial_seed(); });

  m.def("rand", [](nb::args size, std::optional<Generator*> g, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "rand");
    return rand(shape_from_args(size), float_dtype(dtype, "rand"), gen_ptr(g));
  }, "size"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
     "Uniform samples in [0, 1).");
  m.def("randn", [](nb::args size, std::optional<Generator*> g, std::optional<DType> dtype, nb::handle device) {
    check_device(device, "randn");
    return randn(shape_from_args(size), float_dtype(dtype, "randn"), gen_ptr(g));
  }, "size"_a, nb::kw_only(), "generator"_a = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
     "Standard normal samples.");
  // randint(low=0, high, size): the two- and three-argument forms, as torch.
  m.def("randint", [](nb::args args, nb::handle size, std::optional<Generator*> g, std::optional<DType> dtype,
                      nb::handle device) {
    check_device(device, "randint");
    int64_t low = 0, high;
    nb::handle sz = size;
    const size_t n = args.size();
    if (n == 3 && sz.is_none()) {
      low = nb::cast<int64_t>(args[0]);
      high = nb::cast<int64_t>(args[1]);
      sz = args[2];
    } else if (n == 2 && sz.is_none()) {
      high = nb::cast<int64_t>(args[0]);
      sz = args[1];
    } else if (n == 2) {
      low = nb::cast<int64_t>(args[0]);
      high = nb::cast<int64_t>(args[1]);
    } else if (n == 1 && !sz.is_none()) {
      high = nb::cast<int64_t>(args[0]);
    } else {
      throw TypeError("[randint] expected randint(low=0, high, size)");
    }
    return randint(low, high, to_shape(sz), dtype.value_or(DType::Int64), gen_ptr(g));
  }, "args"_a, nb::kw_only(), "size"_a = nb::none(), "generator"_a = nb::none(), "dtype"_a = nb::none(),
     "device"_a = nb::none(), "Integers uniform in [low, high).");
}

}  // namespace kiln::py
