// Reductions and scans: kiln.sum, kiln.max (-> kiln.return_types.max), kiln.var,
// ... with torch's signatures, plus the matching Tensor methods.
#include <cmath>
#include <limits>
#include <string>

#include "bind_util.h"
#include "kiln/reduce.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// torch.return_types-style named tuples (values, indices); references held for
// the life of the process (never released at exit, after the interpreter).
nb::handle g_max_type, g_min_type, g_cummax_type, g_cummin_type;

nb::object values_indices(nb::handle type, ValuesIndices r) {
  return type(nb::cast(std::move(r.values)), nb::cast(std::move(r.indices)));
}

// max/min: (input) -> tensor; (input, dim, keepdim) -> (values, indices);
// (input, other tensor) -> the elementwise maximum/minimum when bound.
nb::object extremum(nb::handle m, bool is_max, nb::handle input, nb::handle dim, bool keepdim) {
  const Tensor x = to_tensor(input);
  const char* op = is_max ? "max" : "min";
  if (dim.is_none()) {
    if (keepdim) throw ValueError(std::string("[") + op + "] keepdim=True needs a dim");
    return nb::cast(is_max ? kiln::max(x) : kiln::min(x));
  }
  if (is_tensor(dim) || is_numpy_array(dim)) {
    const char* binary = is_max ? "maximum" : "minimum";
    if (!nb::hasattr(m, binary)) throw NotImplementedError(std::string("[") + op + "] kiln." + binary + " is not available");
    return m.attr(binary)(input, dim);
  }
  const int d = to_dim(dim, op);
  return values_indices(is_max ? g_max_type : g_min_type, is_max ? kiln::max(x, d, keepdim) : kiln::min(x, d, keepdim));
}

std::optional<int> to_optional_int(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return to_dim(h, op);
}

int to_int(nb::handle h, const char* op) { return to_dim(h, op); }

// var-family arguments as torch takes them: var(x, dim=None, *, correction=1,
// keepdim=False), plus the legacy var(x, unbiased) and var(x, dim, unbiased, keepdim).
struct MomentArgs {
  DimList dim;
  double correction = 1.0;
};
MomentArgs moment_args(nb::handle dim, nb::handle unbiased, nb::handle correction) {
  MomentArgs a;
  nb::handle unb = unbiased;
  if (PyBool_Check(dim.ptr())) {  // var(x, True): dim slot holds `unbiased`
    unb = dim;
  } else {
    a.dim = to_dims(dim, "var");
  }
  if (!correction.is_none()) {
    if (!unb.is_none()) throw ValueError("[var] cannot pass both correction and unbiased");
    a.correction = nb::cast<double>(nb::float_(correction));
  } else if (!unb.is_none()) {
    a.correction = nb::cast<bool>(unb) ? 1.0 : 0.0;
  }
  return a;
}

// norm's p: a number, None (2), "fro" (2) or inf; "nuc" is a matrix norm.
double norm_p(nb::handle p) {
  if (p.is_none()) return 2.0;
  if (nb::isinstance<nb::str>(p)) {
    const std::string s(utf8(p, "norm", "p"));
    if (s == "fro") return 2.0;
    if (s == "nuc") throw NotImplementedError("[norm] the nuclear norm ('nuc') is not supported yet");
    throw ValueError("[norm] unknown p '" + s + "'");
  }
  return nb::cast<double>(nb::float_(p));
}

}  // namespace
}  // namespace kiln::py

void init_reduce(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;

  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  g_max_type = namedtuple("max", nb::make_tuple("values", "indices")).release();
  g_min_type = namedtuple("min", nb::make_tuple("values", "indices")).release();
  nb::object rt = nb::module_::import_("types").attr("SimpleNamespace")();
  g_cummax_type = namedtuple("cummax", nb::make_tuple("values", "indices")).release();
  g_cummin_type = namedtuple("cummin", nb::make_tuple("values", "indices")).release();
  for (nb::handle t : {g_max_type, g_min_type, g_cummax_type, g_cummin_type}) {
    nb::setattr(t, "__module__", nb::str("kiln.return_types"));
    nb::setattr(rt, t.attr("__name__"), t);
  }
  m.attr("return_types") = rt;

  m.def("sum", [](nb::handle x, nb::handle dim, bool keepdim, nb::handle dtype) {
    return kiln::sum(to_tensor(x), to_dims(dim, "sum"), keepdim, to_optional_dtype(dtype));
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
     "Sum over dims (None = all). Integers and bool accumulate in int64.");
  m.def("mean", [](nb::handle x, nb::handle dim, bool keepdim, nb::handle dtype) {
    return kiln::mean(to_tensor(x), to_dims(dim, "mean"), keepdim, to_optional_dtype(dtype));
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
     "Mean over dims; needs a floating or complex input (or dtype).");
  m.def("prod", [](nb::handle x, nb::handle dim, bool keepdim, nb::handle dtype) {
    return kiln::prod(to_tensor(x), to_dims(dim, "prod"), keepdim, to_optional_dtype(dtype));
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
     "Product over dims. Integers and bool accumulate in int64.");

  m.def(
      "nansum",
      [](nb::handle x, nb::handle dim, bool keepdim, nb::handle dtype) {
        return kiln::nansum(to_tensor(x), to_dims(dim, "nansum"), keepdim, to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Sum over dims of the non-NaN entries.");
  m.def(
      "nanmean",
      [](nb::handle x, nb::handle dim, bool keepdim, nb::handle dtype) {
        return kiln::nanmean(to_tensor(x), to_dims(dim, "nanmean"), keepdim, to_optional_dtype(dtype));
      },
      "input"_a, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Mean over dims of the non-NaN entries (NaN where there are none).");

  const nb::handle mod = m;  // the module outlives its functions
  m.def("max", [mod](nb::handle x, nb::handle dim, bool keepdim) { return extremum(mod, true, x, dim, keepdim); },
        "input"_a, "dim"_a = nb::none(), "keepdim"_a = false,
        "max(input) -> Tensor; max(input, dim, keepdim=False) -> (values, indices).");
  m.def("min", [mod](nb::handle x, nb::handle dim, bool keepdim) { return extremum(mod, false, x, dim, keepdim); },
        "input"_a, "dim"_a = nb::none(), "keepdim"_a = false,
        "min(input) -> Tensor; min(input, dim, keepdim=False) -> (values, indices).");
  m.def("amax", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::amax(to_tensor(x), to_dims(dim, "amax"), keepdim);
  }, "input"_a, nb::arg("dim").none() = nb::tuple(), "keepdim"_a = false);
  m.def("amin", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::amin(to_tensor(x), to_dims(dim, "amin"), keepdim);
  }, "input"_a, nb::arg("dim").none() = nb::tuple(), "keepdim"_a = false);
  m.def("argmax", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::argmax(to_tensor(x), to_optional_int(dim, "argmax"), keepdim);
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("argmin", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::argmin(to_tensor(x), to_optional_int(dim, "argmin"), keepdim);
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);

  auto moment = [&m](const char* nm, auto fn) {
    m.def(nm, [fn](nb::handle x, nb::handle dim, nb::handle unbiased, bool keepdim, nb::handle correction) {
      const MomentArgs a = moment_args(dim, unbiased, correction);
      return fn(to_tensor(x), a.dim, a.correction, keepdim);
    }, "input"_a, "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
       "correction"_a = nb::none());
  };
  moment("var", [](const Tensor& x, const DimList& d, double c, bool k) { return kiln::var(x, d, c, k); });
  moment("std", [](const Tensor& x, const DimList& d, double c, bool k) { return kiln::std(x, d, c, k); });
  moment("var_mean", [](const Tensor& x, const DimList& d, double c, bool k) {
    auto [v, mu] = kiln::var_mean(x, d, c, k);
    return nb::make_tuple(v, mu);
  });
  moment("std_mean", [](const Tensor& x, const DimList& d, double c, bool k) {
    auto [s, mu] = kiln::std_mean(x, d, c, k);
    return nb::make_tuple(s, mu);
  });

  m.def("logsumexp", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::logsumexp(to_tensor(x), to_dims(dim, "logsumexp"), keepdim);
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("norm", [](nb::handle x, nb::handle p, nb::handle dim, bool keepdim, nb::handle dtype) {
    return kiln::norm(to_tensor(x), norm_p(p), to_dims(dim, "norm"), keepdim, to_optional_dtype(dtype));
  }, "input"_a, "p"_a = "fro", "dim"_a = nb::none(), "keepdim"_a = false, "dtype"_a = nb::none(),
     "Vector p-norm over dims (p = 2, 1, inf, -inf, 0 or any real; 'fro' = 2).");

  m.def("cumsum", [](nb::handle x, nb::handle dim, nb::handle dtype) {
    return kiln::cumsum(to_tensor(x), to_int(dim, "cumsum"), to_optional_dtype(dtype));
  }, "input"_a, "dim"_a, nb::kw_only(), "dtype"_a = nb::none());
  m.def("cumprod", [](nb::handle x, nb::handle dim, nb::handle dtype) {
    return kiln::cumprod(to_tensor(x), to_int(dim, "cumprod"), to_optional_dtype(dtype));
  }, "input"_a, "dim"_a, nb::kw_only(), "dtype"_a = nb::none());

  m.def(
      "logcumsumexp",
      [](nb::handle x, nb::handle dim) {
        return kiln::logcumsumexp(to_tensor(x), to_int(dim, "logcumsumexp"));
      },
      "input"_a, "dim"_a, "log(cumsum(exp(input))) along dim, without overflow.");
  m.def(
      "cummax",
      [](nb::handle x, nb::handle dim) {
        return values_indices(g_cummax_type, kiln::cummax(to_tensor(x), to_int(dim, "cummax")));
      },
      "input"_a, "dim"_a, "Running maximum along dim and the index it came from: (values, indices).");
  m.def(
      "cummin",
      [](nb::handle x, nb::handle dim) {
        return values_indices(g_cummin_type, kiln::cummin(to_tensor(x), to_int(dim, "cummin")));
      },
      "input"_a, "dim"_a, "Running minimum along dim and the index it came from: (values, indices).");

  m.def("all", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::all(to_tensor(x), to_dims(dim, "all"), keepdim);
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("any", [](nb::handle x, nb::handle dim, bool keepdim) {
    return kiln::any(to_tensor(x), to_dims(dim, "any"), keepdim);
  }, "input"_a, "dim"_a = nb::none(), "keepdim"_a = false);
  m.def("count_nonzero", [](nb::handle x, nb::handle dim) {
    return kiln::count_nonzero(to_tensor(x), to_dims(dim, "count_nonzero"));
  }, "input"_a, "dim"_a = nb::none());

  for (const char* name :
       {"sum",    "mean",          "prod",   "max",       "min",          "amax",   "amin",    "argmax",
        "argmin", "var",           "std",    "logsumexp", "norm",         "cumsum", "cumprod", "all",
        "any",    "count_nonzero", "nansum", "nanmean",   "logcumsumexp", "cummax", "cummin"})
    def_tensor_method(m, name);
}
