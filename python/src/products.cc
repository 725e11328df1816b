// The products of include/kiln/products.h with torch's signatures: dot, vdot,
// inner, outer (and ger), mv, kron, tensordot, matrix_power, the addmm family
// (keyword-only beta / alpha, and the in-place methods), linalg.multi_dot,
// linalg.vecdot, linalg.matmul and linalg.matrix_power. out= writes a result of
// out's exact shape and dtype (kiln/out.h).
#include "kiln/products.h"

#include <string>

#include "bind_util.h"
#include "kiln/matmul.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// tensordot's dims=: an int, a pair of int lists, or a pair of ints.
Tensor tensordot_py(const Tensor& a, const Tensor& b, nb::handle dims) {
  if (PyIndex_Check(dims.ptr()) && !PyBool_Check(dims.ptr()) && !is_tensor(dims))
    return tensordot(a, b, to_int64(dims, "tensordot", "dims"));
  KILN_CHECK(PySequence_Check(dims.ptr()) && nb::len(dims) == 2, TypeError,
             "[tensordot] dims must be an int or a pair of dim lists, got " << py_repr(dims));
  nb::object seq = nb::borrow(dims);
  const std::vector<int> da = *to_dims(seq[0], "tensordot"), db = *to_dims(seq[1], "tensordot");
  return tensordot(a, b, da, db);
}

}  // namespace
}  // namespace kiln::py

void init_products(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  using Pair = Tensor (*)(const Tensor&, const Tensor&);
  struct Two {
    const char* name;
    const char* second;  // torch's name of the second argument
    Pair fn;
  };
  for (const Two& f : {Two{"dot", "tensor", &dot}, Two{"vdot", "other", &vdot}, Two{"inner", "other", &inner},
                       Two{"outer", "vec2", &outer}, Two{"ger", "vec2", &outer}, Two{"mv", "vec", &mv},
                       Two{"kron", "other", &kron}, Two{"linalg_matmul", "other", &matmul}}) {
    m.def(
        f.name,
        [f](nb::handle a, nb::handle b, nb::handle out) {
          return result_or_out(f.name, f.fn(to_tensor(a), to_tensor(b)), out);
        },
        "input"_a, nb::arg(f.second), nb::kw_only(), "out"_a = nb::none());
    if (std::string(f.name).rfind("linalg_", 0) != 0) def_tensor_method(m, f.name);
  }
  using Add = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
  using AddInPlace =
      const Tensor& (*)(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
  struct Three {
    const char* name;
    const char* inplace;
    const char* a1;
    const char* a2;
    Add fn;
    AddInPlace in_fn;
  };
  for (const Three& f : {Three{"addmm", "addmm_", "mat1", "mat2", &addmm, &addmm_},
                         Three{"addmv", "addmv_", "mat", "vec", &addmv, &addmv_},
                         Three{"addr", "addr_", "vec1", "vec2", &addr, &addr_},
                         Three{"baddbmm", "baddbmm_", "batch1", "batch2", &baddbmm, &baddbmm_},
                         Three{"addbmm", "addbmm_", "batch1", "batch2", &addbmm, &addbmm_}}) {
    m.def(
        f.name,
        [f](nb::handle input, nb::handle x, nb::handle y, nb::handle beta, nb::handle alpha, nb::handle out) {
          return result_or_out(f.name,
                               f.fn(to_tensor(input), to_tensor(x), to_tensor(y), to_scalar(beta, f.name),
                                    to_scalar(alpha, f.name)),
                               out);
        },
        "input"_a, nb::arg(f.a1), nb::arg(f.a2), nb::kw_only(), "beta"_a = 1, "alpha"_a = 1,
        "out"_a = nb::none());
    def_tensor_method(m, f.name);
    m.def(
        f.inplace,
        [f](nb::object self, nb::handle x, nb::handle y, nb::handle beta, nb::handle alpha) {
          f.in_fn(nb::cast<Tensor&>(self), to_tensor(x), to_tensor(y), to_scalar(beta, f.inplace),
                  to_scalar(alpha, f.inplace));
          return self;
        },
        "input"_a, nb::arg(f.a1), nb::arg(f.a2), nb::kw_only(), "beta"_a = 1, "alpha"_a = 1);
    def_tensor_method(m, f.inplace);
  }
  m.def(
      "tensordot",
      [](nb::handle a, nb::handle b, nb::handle dims, nb::handle out) {
        return result_or_out("tensordot", tensordot_py(to_tensor(a), to_tensor(b), dims), out);
      },
      "a"_a, "b"_a, "dims"_a = 2, "out"_a = nb::none());
  m.def(
      "matrix_power", [](nb::handle a, int64_t n) { return matrix_power(to_tensor(a), n); }, "input"_a,
      "n"_a);
  def_tensor_method(m, "matrix_power");
  m.def(
      "linalg_matrix_power",
      [](nb::handle a, int64_t n, nb::handle out) {
        return result_or_out("linalg.matrix_power", matrix_power(to_tensor(a), n), out);
      },
      "A"_a, "n"_a, nb::kw_only(), "out"_a = nb::none());
  m.def(
      "linalg_multi_dot",
      [](nb::sequence tensors, nb::handle out) {
        std::vector<Tensor> ts;
        for (nb::handle t : tensors) ts.push_back(to_tensor(t));
        return result_or_out("linalg.multi_dot", linalg::multi_dot(ts), out);
      },
      "tensors"_a, nb::kw_only(), "out"_a = nb::none());
  m.def(
      "linalg_vecdot",
      [](nb::handle x, nb::handle y, int dim, nb::handle out) {
        return result_or_out("linalg.vecdot", linalg::vecdot(to_tensor(x), to_tensor(y), dim), out);
      },
      "x"_a, "y"_a, nb::kw_only(), "dim"_a = -1, "out"_a = nb::none());
}
