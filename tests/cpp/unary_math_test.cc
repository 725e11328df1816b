// Floating-point unary math against a long-double reference, over f32/f64/bf16/f16
// (SIMD kernels for contiguous inputs, scalar loops for strided ones), complex,
// integer and bool inputs, special values, non-contiguous/empty/0-dim inputs and
// the dtype errors.
#include <complex>
#include <functional>

#include "unary_test_util.h"

using namespace kiln;
using namespace unary_test;

namespace {

using LD = long double;

LD sigmoid_ref(LD x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

struct MathOp {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<Tensor&(Tensor&)> fn_;
  LD (*ref)(LD);
  double range;                // random inputs in [-range, range]
  double f32_ulps;             // tolerance for float32 (SIMD and scalar)
  double (*extra)(double x);   // extra ulps as a function of x (conditioning), or null
  bool complex;                // has a complex form
};

double gelu_tanh_cond(double x) {
  // Relative error of sigmoid(2u) grows with |2u| (the argument's rounding).
  const double u = 0.7978845608 * (x + 0.044715 * x * x * x);
  return 3 * std::fabs(2 * u);
}
double trig_cond(double x) { return 0; }

std::vector<MathOp> math_ops() {
  return {
      {"exp", [](const Tensor& x) { return kiln::exp(x); }, [](Tensor& x) -> Tensor& { return exp_(x); },
       [](LD x) { return std::exp(x); }, 30, 2, nullptr, true},
      {"exp2", [](const Tensor& x) { return kiln::exp2(x); }, [](Tensor& x) -> Tensor& { return exp2_(x); },
       [](LD x) { return std::exp2(x); }, 30, 2, nullptr, false},
      {"expm1", [](const Tensor& x) { return kiln::expm1(x); }, [](Tensor& x) -> Tensor& { return expm1_(x); },
       [](LD x) { return std::expm1(x); }, 30, 3, nullptr, false},
      {"log", [](const Tensor& x) { return kiln::log(x); }, [](Tensor& x) -> Tensor& { return log_(x); },
       [](LD x) { return std::log(x); }, 1e4, 2, nullptr, true},
      {"log2", [](const Tensor& x) { return kiln::log2(x); }, [](Tensor& x) -> Tensor& { return log2_(x); },
       [](LD x) { return std::log2(x); }, 1e4, 3, nullptr, false},
      {"log1p", [](const Tensor& x) { return kiln::log1p(x); }, [](Tensor& x) -> Tensor& { return log1p_(x); },
       [](LD x) { return std::log1p(x); }, 2, 3, nullptr, false},
      {"sqrt", [](const Tensor& x) { return kiln::sqrt(x); }, [](Tensor& x) -> Tensor& { return sqrt_(x); },
       [](LD x) { return std::sqrt(x); }, 1e6, 1, nullptr, true},
      {"rsqrt", [](const Tensor& x) { return kiln::rsqrt(x); }, [](Tensor& x) -> Tensor& { return rsqrt_(x); },
       [](LD x) { return 1 / std::sqrt(x); }, 1e6, 2, nullptr, true},
      {"reciprocal", [](const Tensor& x) { return kiln::reciprocal(x); },
       [](Tensor& x) -> Tensor& { return reciprocal_(x); }, [](LD x) { return 1 / x; }, 1e3, 1, nullptr, true},
      {"sin", [](const Tensor& x) { return kiln::sin(x); }, [](Tensor& x) -> Tensor& { return sin_(x); },
       [](LD x) { return std::sin(x); }, 100, 4, trig_cond, true},
      {"cos", [](const Tensor& x) { return kiln::cos(x); }, [](Tensor& x) -> Tensor& { return cos_(x); },
       [](LD x) { return std::cos(x); }, 100, 4, trig_cond, true},
      {"tan", [](const Tensor& x) { return kiln::tan(x); }, [](Tensor& x) -> Tensor& { return tan_(x); },
       [](LD x) { return std::tan(x); }, 10, 2, nullptr, true},
      {"tanh", [](const Tensor& x) { return kiln::tanh(x); }, [](Tensor& x) -> Tensor& { return tanh_(x); },
       [](LD x) { return std::tanh(x); }, 10, 4, nullptr, true},
      {"sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); },
       [](Tensor& x) -> Tensor& { return sigmoid_(x); }, sigmoid_ref, 30, 4, nullptr, true},
      {"silu", [](const Tensor& x) { return kiln::silu(x); }, [](Tensor& x) -> Tensor& { return silu_(x); },
       [](LD x) { return x * sigmoid_ref(x); }, 30, 5, nullptr, false},
      {"gelu", [](const Tensor& x) { return kiln::gelu(x); }, [](Tensor& x) -> Tensor& { return gelu_(x); },
       [](LD x) { return LD(0.5) * x * std::erfc(-x / std::sqrt(LD(2))); }, 10, 2, nullptr, false},
      {"gelu_tanh", [](const Tensor& x) { return kiln::gelu(x, "tanh"); },
       [](Tensor& x) -> Tensor& { return gelu_(x, "tanh"); },
       [](LD x) {
         const LD u = std::sqrt(2 / LD(3.14159265358979323846264338327950288L)) * (x + LD(0.044715) * x * x * x);
         return x * sigmoid_ref(2 * u);
       },
       10, 4, gelu_tanh_cond, false},
  };
}

double ulps_for(const MathOp& op, DType dt, double x) {
  double u;
  switch (dt) {
    case DType::Float32: u = op.f32_ulps; break;
    case DType::Float64: u = 4; break;
    default: u = 1; break;  // computed in float, one rounding to the narrow type
  }
  if (op.extra && dt != DType::Float64) u += op.extra(x) * (dt == DType::Float32 ? 1 : 1.0 / 65536);
  return u;
}

// Checks got == op(x) elementwise (x and got of the same shape; x's values as
// stored, so the reference sees exactly what the op saw).
void check(const MathOp& op, const Tensor& x, const Tensor& got, DType dt, const std::string& what) {
  ASSERT_EQ(got.dtype(), dt) << op.name << " " << what;
  ASSERT_EQ(got.sizes(), x.sizes()) << op.name << " " << what;
  const std::vector<double> xs = values(x), ys = values(got);
  int bad = 0;
  for (size_t i = 0; i < xs.size() && bad < 5; ++i) {
    const double ref = double(op.ref(LD(xs[i])));
    if (!close(ys[i], ref, dt, ulps_for(op, dt, xs[i]))) {
      ++bad;
      ADD_FAILURE() << op.name << " " << what << " " << dname(dt) << ": x=" << xs[i] << " got " << ys[i]
                    << " want " << ref;
    }
  }
}

const DType kFloatDTypes[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};

}  // namespace

TEST(UnaryMath, FloatDTypesContiguousAndStrided) {
  for (const MathOp& op : math_ops()) {
    for (DType dt : kFloatDTypes) {
      const Tensor x = make(inputs(op.range), dt);
      check(op, x, op.fn(x), dt, "contiguous");
      // Strided: every other element of a 2-column view, and a transpose.
      const int64_t n = x.numel() / 2 * 2;
      const Tensor m = x.narrow(0, 0, n).view({n / 2, 2});
      check(op, m.select(1, 1), op.fn(m.select(1, 1)), dt, "strided");
      check(op, m.t(), op.fn(m.t()), dt, "transposed");
      // In-place on a copy gives the same values.
      Tensor c = x.clone();
      Tensor& r = op.fn_(c);
      EXPECT_EQ(&r, &c);
      check(op, x, c, dt, "in-place");
    }
  }
}

TEST(UnaryMath, ContiguousMatchesStridedFloat32) {
  // The SIMD kernel and the scalar loop agree closely (both near the reference).
  for (const MathOp& op : math_ops()) {
    const Tensor x = make(inputs(op.range, 4001), DType::Float32);
    const Tensor wide = empty({x.numel(), 2}, DType::Float32);
    wide.select(1, 0).copy_(x);
    const std::vector<double> a = values(op.fn(x)), b = values(op.fn(wide.select(1, 0)));
    const std::vector<double> xs = values(x);
    for (size_t i = 0; i < a.size(); ++i) {
      const double ulps = 2 * ulps_for(op, DType::Float32, xs[i]);
      EXPECT_TRUE(close(a[i], b[i], DType::Float32, ulps)) << op.name << " x=" << xs[i] << " " << a[i] << " vs " << b[i];
    }
  }
}

TEST(UnaryMath, IntegerAndBoolInputsGiveFloat32) {
  const Tensor xi = arange(-5, 6);  // int64
  for (const MathOp& op : math_ops()) {
    const bool float_only = std::string(op.name).rfind("gelu", 0) == 0 || std::string(op.name) == "silu";
    for (DType dt : {DType::Int64, DType::Int32, DType::UInt8, DType::Int8, DType::Bool}) {
      Tensor x = xi.to(dt);
      if (float_only) {
        EXPECT_THROW(op.fn(x), TypeError) << op.name << " " << dname(dt);
        continue;
      }
      const Tensor got = op.fn(x);
      EXPECT_EQ(got.dtype(), DType::Float32) << op.name << " " << dname(dt);
      check(op, x.to(DType::Float32), got, DType::Float32, std::string("from ") + dname(dt));
      // In place into an integer tensor cannot hold the float result.
      EXPECT_THROW(op.fn_(x), TypeError) << op.name;
    }
  }
}

TEST(UnaryMath, Complex) {
  using CL = std::complex<LD>;
  const std::vector<std::pair<const char*, std::function<CL(CL)>>> refs = {
      {"exp", [](CL z) { return std::exp(z); }},      {"log", [](CL z) { return std::log(z); }},
      {"sqrt", [](CL z) { return std::sqrt(z); }},    {"rsqrt", [](CL z) { return LD(1) / std::sqrt(z); }},
      {"reciprocal", [](CL z) { return LD(1) / z; }}, {"sin", [](CL z) { return std::sin(z); }},
      {"cos", [](CL z) { return std::cos(z); }},      {"tan", [](CL z) { return std::tan(z); }},
      {"tanh", [](CL z) { return std::tanh(z); }},    {"sigmoid", [](CL z) { return LD(1) / (LD(1) + std::exp(-z)); }},
  };
  std::vector<complex128> zs;
  for (double re : {-2.5, -0.75, 0.3, 1.0, 3.0})
    for (double im : {-1.5, -0.2, 0.0, 0.9, 2.0}) zs.push_back({re, im});
  for (DType dt : {DType::Complex64, DType::Complex128}) {
    const Tensor z = from_buffer_copy(zs.data(), {int64_t(zs.size())}, DType::Complex128).to(dt);
    const Tensor z128 = z.to(DType::Complex128).contiguous();
    const complex128* zin = z128.data<complex128>();
    const double tol = dt == DType::Complex64 ? 2e-6 : 1e-14;
    for (const auto& [opname, ref] : refs) {
      const MathOp* op = nullptr;
      const auto ops = math_ops();
      for (const MathOp& o : ops)
        if (std::string(o.name) == opname) op = &o;
      ASSERT_NE(op, nullptr);
      const Tensor got = op->fn(z);
      ASSERT_EQ(got.dtype(), dt) << opname;
      const Tensor g = got.to(DType::Complex128).contiguous();
      for (int64_t i = 0; i < g.numel(); ++i) {
        const CL want = ref(CL(zin[i].real(), zin[i].imag()));
        const complex128 w(double(want.real()), double(want.imag()));
        EXPECT_LE(std::abs(g.data<complex128>()[i] - w), tol * (1 + std::abs(w))) << opname << " z=" << zin[i];
      }
    }
    // abs of complex is real.
    const Tensor a = kiln::abs(z);
    EXPECT_EQ(a.dtype(), to_real(dt));
    for (int64_t i = 0; i < a.numel(); ++i)
      EXPECT_NEAR(values(a)[i], std::abs(zin[i]), tol * (1 + std::abs(zin[i])));
    // Real-only ops reject complex.
    EXPECT_THROW(kiln::exp2(z), TypeError);
    EXPECT_THROW(kiln::log1p(z), TypeError);
    EXPECT_THROW(kiln::silu(z), TypeError);
    EXPECT_THROW(kiln::gelu(z), TypeError);
  }
}

TEST(UnaryMath, ShapesEmptyZeroDimAndErrors) {
  for (const MathOp& op : math_ops()) {
    const Tensor e = empty({0, 3}, DType::Float32);
    const Tensor ge = op.fn(e);
    EXPECT_EQ(ge.sizes(), (Shape{0, 3}));
    const Tensor s = scalar_tensor(Scalar(0.75), DType::Float32);
    const Tensor gs = op.fn(s);
    EXPECT_EQ(gs.dim(), 0);
    EXPECT_TRUE(close(gs.item<double>(), double(op.ref(0.75L)), DType::Float32, 8)) << op.name;
    // Broadcast (stride-0) input.
    const Tensor b = s.expand({4, 5});
    const Tensor gb = op.fn(b);
    for (double v : values(gb)) EXPECT_TRUE(close(v, gs.item<double>(), DType::Float32, 4)) << op.name;
    Tensor bb = b;
    EXPECT_THROW(op.fn_(bb), ValueError) << op.name;
    // FP8 is not supported by torch for these.
    EXPECT_THROW(op.fn(zeros({2}, DType::Float8_e4m3fn)), TypeError) << op.name;
    EXPECT_THROW(op.fn(zeros({2}, DType::Float8_e5m2)), TypeError) << op.name;
  }
  try {
    kiln::exp(zeros({2}, DType::Float8_e4m3fn));
    FAIL();
  } catch (const TypeError& err) {
    EXPECT_EQ(std::string(err.what()), "[exp] unsupported dtype float8_e4m3fn");
  }
  EXPECT_THROW(kiln::gelu(zeros({2}), "fast"), ValueError);
}
