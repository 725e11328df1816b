// kiln.linalg: bound as _C.linalg_<name>, seen as kiln.linalg.<name>, with
// torch.linalg's signatures; multi-output ops return named tuples as
// torch.return_types does (kiln.return_types.linalg_<name>).
#include "kiln/linalg.h"

#include <cmath>
#include <limits>
#include <string>

#include "bind_util.h"
#include "kiln/blas_env.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// A torch.return_types-style named tuple type; the reference is kept for the
// life of the process (never released at exit, after the interpreter).
nb::handle make_type(const char* name, std::initializer_list<const char*> fields) {
  nb::list f;
  for (const char* s : fields) f.append(nb::str(s));
  nb::object t = nb::module_::import_("collections").attr("namedtuple")(name, f);
  nb::setattr(t, "__module__", nb::str("kiln.return_types"));
  return t.release();
}

std::optional<double> opt_double(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return nb::cast<double>(nb::float_(h));
}

// A vector/matrix norm order: a number, "fro"/"nuc", or inf as a float.
linalg::MatrixOrd matrix_ord(nb::handle h) {
  if (nb::isinstance<nb::str>(h)) return std::string(utf8(h, "linalg.norm", "ord"));
  return nb::cast<double>(nb::float_(h));
}

}  // namespace
}  // namespace kiln::py

void init_linalg(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  namespace L = kiln::linalg;
  const nb::handle inv_ex_t = make_type("linalg_inv_ex", {"inverse", "info"});
  const nb::handle solve_ex_t = make_type("linalg_solve_ex", {"result", "info"});
  const nb::handle luf_t = make_type("linalg_lu_factor", {"LU", "pivots"});
  const nb::handle lufex_t = make_type("linalg_lu_factor_ex", {"LU", "pivots", "info"});
  const nb::handle lu_t = make_type("linalg_lu", {"P", "L", "U"});
  const nb::handle slogdet_t = make_type("linalg_slogdet", {"sign", "logabsdet"});
  const nb::handle qr_t = make_type("linalg_qr", {"Q", "R"});
  const nb::handle svd_t = make_type("linalg_svd", {"U", "S", "Vh"});
  const nb::handle lstsq_t = make_type("linalg_lstsq", {"solution", "residuals", "rank", "singular_values"});
  const nb::handle chol_t = make_type("linalg_cholesky_ex", {"L", "info"});
  const nb::handle eigh_t = make_type("linalg_eigh", {"eigenvalues", "eigenvectors"});
  const nb::handle ldl_t = make_type("linalg_ldl_factor", {"LD", "pivots"});
  const nb::handle ldlex_t = make_type("linalg_ldl_factor_ex", {"LD", "pivots", "info"});
  const nb::handle geqrf_t = make_type("geqrf", {"a", "tau"});

  m.def(
      "_openblas_core", [] { return std::string(L::openblas_core()); },
      "The kernel set OpenBLAS runs with (kiln/_blas_env.py picks it on masked CPU models).");
  m.def(
      "linalg_inv", [](nb::handle A) { return L::inv(to_tensor(A)); }, "A"_a,
      "Inverse of a (batch of) square matrices; raises RuntimeError on singular input.");
  m.def(
      "linalg_inv_ex",
      [inv_ex_t](nb::handle A, bool check_errors) {
        auto r = L::inv_ex(to_tensor(A), check_errors);
        return inv_ex_t(nb::cast(r.inverse), nb::cast(r.info));
      },
      "A"_a, nb::kw_only(), "check_errors"_a = false);
  m.def(
      "linalg_solve",
      [](nb::handle A, nb::handle B, bool left) { return L::solve(to_tensor(A), to_tensor(B), left); }, "A"_a,
      "B"_a, nb::kw_only(), "left"_a = true);
  m.def(
      "linalg_solve_ex",
      [solve_ex_t](nb::handle A, nb::handle B, bool left, bool check_errors) {
        auto r = L::solve_ex(to_tensor(A), to_tensor(B), left, check_errors);
        return solve_ex_t(nb::cast(r.result), nb::cast(r.info));
      },
      "A"_a, "B"_a, nb::kw_only(), "left"_a = true, "check_errors"_a = false);
  m.def(
      "linalg_solve_triangular",
      [](nb::handle A, nb::handle B, bool upper, bool left, bool unitriangular) {
        return L::solve_triangular(to_tensor(A), to_tensor(B), upper, left, unitriangular);
      },
      "A"_a, "B"_a, nb::kw_only(), "upper"_a, "left"_a = true, "unitriangular"_a = false);

  m.def(
      "linalg_lu_factor",
      [luf_t](nb::handle A, bool pivot) {
        auto r = L::lu_factor(to_tensor(A), pivot);
        return luf_t(nb::cast(r.LU), nb::cast(r.pivots));
      },
      "A"_a, nb::kw_only(), "pivot"_a = true);
  m.def(
      "linalg_lu_factor_ex",
      [lufex_t](nb::handle A, bool pivot, bool check_errors) {
        auto r = L::lu_factor_ex(to_tensor(A), pivot, check_errors);
        return lufex_t(nb::cast(r.LU), nb::cast(r.pivots), nb::cast(r.info));
      },
      "A"_a, nb::kw_only(), "pivot"_a = true, "check_errors"_a = false);
  m.def(
      "linalg_lu",
      [lu_t](nb::handle A, bool pivot) {
        auto r = L::lu(to_tensor(A), pivot);
        return lu_t(nb::cast(r.P), nb::cast(r.L), nb::cast(r.U));
      },
      "A"_a, nb::kw_only(), "pivot"_a = true);
  m.def(
      "linalg_lu_solve",
      [](nb::handle LU, nb::handle piv, nb::handle B, bool left, bool adjoint) {
        return L::lu_solve(to_tensor(LU), to_tensor(piv), to_tensor(B), left, adjoint);
      },
      "LU"_a, "pivots"_a, "B"_a, nb::kw_only(), "left"_a = true, "adjoint"_a = false);
  m.def(
      "linalg_det", [](nb::handle A) { return L::det(to_tensor(A)); }, "A"_a);
  m.def(
      "linalg_slogdet",
      [slogdet_t](nb::handle A) {
        auto r = L::slogdet(to_tensor(A));
        return slogdet_t(nb::cast(r.sign), nb::cast(r.logabsdet));
      },
      "A"_a);

  m.def(
      "linalg_qr",
      [qr_t](nb::handle A, nb::handle mode) {
        auto r = L::qr(to_tensor(A), std::string(utf8(mode, "linalg.qr", "mode")));
        return qr_t(nb::cast(r.Q), nb::cast(r.R));
      },
      "A"_a, "mode"_a = "reduced");
  m.def(
      "linalg_householder_product",
      [](nb::handle A, nb::handle tau) { return L::householder_product(to_tensor(A), to_tensor(tau)); },
      "A"_a, "tau"_a);

  m.def(
      "linalg_svd",
      [svd_t](nb::handle A, bool full_matrices) {
        auto r = L::svd(to_tensor(A), full_matrices);
        return svd_t(nb::cast(r.U), nb::cast(r.S), nb::cast(r.Vh));
      },
      "A"_a, "full_matrices"_a = true);
  m.def(
      "linalg_svdvals", [](nb::handle A) { return L::svdvals(to_tensor(A)); }, "A"_a);
  m.def(
      "linalg_pinv",
      [](nb::handle A, nb::handle atol, nb::handle rtol, bool hermitian) {
        return L::pinv(to_tensor(A), opt_double(atol), opt_double(rtol), hermitian);
      },
      "A"_a, nb::kw_only(), "atol"_a = nb::none(), "rtol"_a = nb::none(), "hermitian"_a = false);
  m.def(
      "linalg_matrix_rank",
      [](nb::handle A, nb::handle atol, nb::handle rtol, bool hermitian) {
        return L::matrix_rank(to_tensor(A), opt_double(atol), opt_double(rtol), hermitian);
      },
      "A"_a, nb::kw_only(), "atol"_a = nb::none(), "rtol"_a = nb::none(), "hermitian"_a = false);
  m.def(
      "linalg_lstsq",
      [lstsq_t](nb::handle A, nb::handle B, nb::handle rcond, nb::handle driver_arg) {
        const auto d = optional_utf8(driver_arg, "linalg.lstsq", "driver");
        const std::optional<std::string> driver =
            d ? std::optional<std::string>(std::string(*d)) : std::nullopt;
        auto r = L::lstsq(to_tensor(A), to_tensor(B), opt_double(rcond), driver);
        return lstsq_t(nb::cast(r.solution), nb::cast(r.residuals), nb::cast(r.rank),
                       nb::cast(r.singular_values));
      },
      "A"_a, "B"_a, "rcond"_a = nb::none(), nb::kw_only(), "driver"_a = nb::none());

  m.def(
      "linalg_cholesky", [](nb::handle A, bool upper) { return L::cholesky(to_tensor(A), upper); }, "A"_a,
      nb::kw_only(), "upper"_a = false);
  m.def(
      "linalg_cholesky_ex",
      [chol_t](nb::handle A, bool upper, bool check_errors) {
        auto r = L::cholesky_ex(to_tensor(A), upper, check_errors);
        return chol_t(nb::cast(r.L), nb::cast(r.info));
      },
      "A"_a, nb::kw_only(), "upper"_a = false, "check_errors"_a = false);
  m.def(
      "linalg_eigh",
      [eigh_t](nb::handle A, nb::handle UPLO) {
        auto r = L::eigh(to_tensor(A), std::string(utf8(UPLO, "linalg.eigh", "UPLO")));
        return eigh_t(nb::cast(r.eigenvalues), nb::cast(r.eigenvectors));
      },
      "A"_a, "UPLO"_a = "L");
  m.def(
      "linalg_eigvalsh",
      [](nb::handle A, nb::handle UPLO) {
        return L::eigvalsh(to_tensor(A), std::string(utf8(UPLO, "linalg.eigvalsh", "UPLO")));
      },
      "A"_a, "UPLO"_a = "L");

  m.def(
      "linalg_eigvals", [](nb::handle A) { return L::eigvals(to_tensor(A)); }, "A"_a,
      "The eigenvalues of a general square matrix (complex).");
  m.def(
      "linalg_ldl_factor",
      [ldl_t](nb::handle A, bool hermitian) {
        auto r = L::ldl_factor(to_tensor(A), hermitian);
        return ldl_t(nb::cast(r.LD), nb::cast(r.pivots));
      },
      "A"_a, nb::kw_only(), "hermitian"_a = false);
  m.def(
      "linalg_ldl_factor_ex",
      [ldlex_t](nb::handle A, bool hermitian, bool check_errors) {
        auto r = L::ldl_factor_ex(to_tensor(A), hermitian, check_errors);
        return ldlex_t(nb::cast(r.LD), nb::cast(r.pivots), nb::cast(r.info));
      },
      "A"_a, nb::kw_only(), "hermitian"_a = false, "check_errors"_a = false);
  m.def(
      "geqrf",
      [geqrf_t](nb::handle A) {
        auto r = L::geqrf(to_tensor(A));
        return geqrf_t(nb::cast(r.a), nb::cast(r.tau));
      },
      "input"_a, "LAPACK geqrf's raw QR: (a, tau); linalg.householder_product(a, tau) is Q.");
  def_tensor_method(m, "geqrf");

  m.def(
      "linalg_vector_norm",
      [](nb::handle x, nb::handle ord, nb::handle dim, bool keepdim, nb::handle dtype) {
        return L::vector_norm(to_tensor(x), nb::cast<double>(nb::float_(ord)),
                              to_dims(dim, "linalg.vector_norm"), keepdim, to_optional_dtype(dtype));
      },
      "x"_a, "ord"_a = 2, "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none());
  m.def(
      "linalg_matrix_norm",
      [](nb::handle A, nb::handle ord, std::vector<int> dim, bool keepdim, nb::handle dtype) {
        if (dim.size() != 2) throw ValueError("[linalg.matrix_norm] dim must be a 2-tuple of ints");
        return L::matrix_norm(to_tensor(A), matrix_ord(ord), {dim[0], dim[1]}, keepdim,
                              to_optional_dtype(dtype));
      },
      "A"_a, "ord"_a = "fro", "dim"_a = std::vector<int>{-2, -1}, "keepdim"_a = false, nb::kw_only(),
      "dtype"_a = nb::none());
  // torch.linalg.norm: a matrix norm when ord is a string or dim names two
  // dims (or, with ord given and dim None, for 2-D input); else a vector norm.
  m.def(
      "linalg_norm",
      [](nb::handle A, nb::handle ord, nb::handle dim, bool keepdim, nb::handle dtype) {
        const Tensor x = to_tensor(A);
        const auto dims = to_dims(dim, "linalg.norm");
        const auto dt = to_optional_dtype(dtype);
        if (ord.is_none()) return L::vector_norm(x, 2.0, dims, keepdim, dt);
        if (!dims && x.dim() != 1 && x.dim() != 2)
          throw ValueError(
              "[linalg.norm] If dim is not specified but ord is, the input must be 1D or 2D. Got " +
              std::to_string(x.dim()) + "D.");
        const bool matrix =
            nb::isinstance<nb::str>(ord) || (dims && dims->size() == 2) || (!dims && x.dim() == 2);
        if (!matrix) return L::vector_norm(x, nb::cast<double>(nb::float_(ord)), dims, keepdim, dt);
        const std::pair<int, int> d2 = dims ? std::pair{(*dims)[0], (*dims)[1]} : std::pair{-2, -1};
        return L::matrix_norm(x, matrix_ord(ord), d2, keepdim, dt);
      },
      "A"_a, "ord"_a = nb::none(), "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "dtype"_a = nb::none());
  m.def(
      "linalg_cross",
      [](nb::handle a, nb::handle b, int dim) { return L::cross(to_tensor(a), to_tensor(b), dim); },
      "input"_a, "other"_a, nb::kw_only(), "dim"_a = -1);
}
