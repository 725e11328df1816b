// Walks the op table (op_table/table.h): every entry x dtype x shape class x
// compiled device against its float64 (complex double) oracle, and against
// the CPU result on other devices; and checks that every registered op has an
// entry.
// `kiln_tests --gtest_filter=OpTable.PerfMode --perf` (or KILN_OP_TABLE_PERF=1)
// also times each entry's perf case (printed, not checked).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "core/autograd_record.h"
#include "kiln/autograd.h"
#include "op_table/second_device.h"
#include "op_table/table.h"
#include "ops/registry/all.h"

namespace op_table {
namespace {

using namespace kiln;

// Significant bits of a float dtype, of a complex dtype's parts (0: not a
// float this test rounds to).
int mantissa_bits(DType d) {
  switch (d) {
    case DType::Float64:
    case DType::Complex128:
      return 53;
    case DType::Float32:
    case DType::Complex64:
      return 24;
    case DType::Float8_e4m3fn:
      return 4;
    case DType::Float8_e5m2:
      return 3;
    case DType::BFloat16:
      return 8;
    case DType::Float16:
      return 11;
    default:
      return 0;
  }
}

// v as `d` holds it, computed without kiln (values stay in normal range).
double representable(double v, DType d) {
  if (d == DType::Bool) return v > 0 ? 1.0 : 0.0;
  if (is_integral(d, false)) {
    double r = std::nearbyint(v) + 0.0;  // an integer holds 0, never -0
    return is_signed(d) ? r : std::fabs(r);
  }
  const int p = mantissa_bits(d);
  if (p == 0 || v == 0.0) return v;
  int e = 0;
  const double m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, p)), e - p);
}

double eps(DType d) {
  const int p = mantissa_bits(d);
  return p ? std::ldexp(1.0, 1 - p) : 0.0;
}

int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }

// Row-major index -> multi-index of `shape`.
Shape unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] ? i % shape[k] : 0;
    i = shape[k] ? i / shape[k] : 0;
  }
  return idx;
}
int64_t ravel(const Shape& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t k = 0; k < shape.size(); ++k) i = i * shape[k] + idx[k];
  return i;
}

// A tensor of `d` holding v (values `d` holds exactly; complex through
// complex128, FP8 from its codes).
Tensor from_values(const std::vector<double>& v, const Shape& shape, DType d) {
  return from_buffer_copy(v.data(), shape, DType::Float64).to(d);
}
Tensor from_values(const std::vector<cdouble>& v, const Shape& shape, DType d) {
  return from_buffer_copy(v.data(), shape, DType::Complex128).to(d);
}
Tensor from_values(const std::vector<uint8_t>& codes, const Shape& shape, DType d) {
  return from_buffer_copy(codes.data(), shape, d);
}

// The FP8 code nearest v (NaN: the NaN code; a value past the largest finite
// one saturates: e5m2's infinities are codes of their own).
uint8_t fp8_code_of(double v, DType d) {
  if (std::isnan(v)) return 0x7f;
  if (std::isinf(v) && d == DType::Float8_e5m2) return v > 0 ? 0x7c : 0xfc;
  if (v == 0) return std::signbit(v) ? 0x80 : 0x00;
  const std::vector<uint8_t> all = fp8_codes(d, -INFINITY, INFINITY);
  uint8_t best = all[0];
  for (uint8_t c : all)
    if (std::fabs(fp8_decode(c, d) - v) < std::fabs(fp8_decode(best, d) - v)) best = c;
  return best;
}

// Lays out the logical values that draw(shape) gives as the spec says:
// returns the tensor (made by make(physical values, physical shape)) and
// the logical values.
template <typename T, typename Draw, typename Make>
std::pair<Tensor, std::vector<T>> lay_out(const InputSpec& s, const Draw& draw, const Make& make) {
  const int64_t n = numel(s.shape);
  std::vector<T> logical;
  Tensor t;
  switch (s.layout) {
    case InputSpec::Contiguous:
      logical = draw(s.shape);
      t = make(logical, s.shape);
      break;
    case InputSpec::Transposed: {  // physical [reversed shape], then all dims reversed
      logical = draw(s.shape);
      Shape rev(s.shape.rbegin(), s.shape.rend());
      std::vector<T> phys(n);
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        std::reverse(idx.begin(), idx.end());
        phys[ravel(idx, rev)] = logical[i];
      }
      std::vector<int> perm(s.shape.size());
      std::iota(perm.rbegin(), perm.rend(), 0);
      t = make(phys, rev).permute(perm);
      break;
    }
    case InputSpec::Strided: {  // last dim doubled, every second element taken
      logical = draw(s.shape);
      Shape wide = s.shape;
      wide.back() *= 2;
      std::vector<T> phys(numel(wide), T{});
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        idx.back() *= 2;
        phys[ravel(idx, wide)] = logical[i];
      }
      t = make(phys, wide).slice(-1, 0, wide.back(), 2);
      break;
    }
    case InputSpec::Expanded: {
      const std::vector<T> base = draw(s.base);
      logical.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        const size_t off = s.shape.size() - s.base.size();
        Shape bidx(s.base.size());
        for (size_t k = 0; k < s.base.size(); ++k) bidx[k] = s.base[k] == 1 ? 0 : idx[off + k];
        logical[i] = base[ravel(bidx, s.base)];
      }
      t = make(base, s.base).expand(s.shape);
      break;
    }
  }
  return {t, std::move(logical)};
}

// Builds one input: random representable values for the logical shape, laid
// out as the spec says. Complex: real and imaginary parts drawn alike; FP8:
// codes drawn uniformly among those whose values lie in [lo, hi].
void make_input(const InputSpec& s, DType walk, const Entry& e, std::mt19937_64& rng, Inputs& in) {
  const DType d = s.ints ? s.ints->dtype : s.held.value_or(walk);
  const size_t input = in.tensors.size();
  std::uniform_real_distribution<double> dist(e.lo, e.hi);
  auto make = [d](const auto& v, const Shape& shape) { return from_values(v, shape, d); };
  std::vector<double> values;
  std::vector<cdouble> cvalues;
  Tensor t;
  if (is_complex(d)) {
    const DType part = d == DType::Complex64 ? DType::Float32 : DType::Float64;
    auto draw = [&](const Shape& shape) {
      std::vector<cdouble> v(numel(shape));
      for (cdouble& x : v) {
        const double re = representable(dist(rng), part);
        x = {re, representable(dist(rng), part)};
      }
      if (e.complex_condition) e.complex_condition(input, shape, v);
      if (e.condition && !e.complex_condition) {
        std::vector<double> re(v.size());
        for (size_t i = 0; i < v.size(); ++i) re[i] = v[i].real();
        e.condition(input, shape, re);
        for (size_t i = 0; i < v.size(); ++i) v[i].real(re[i]);
      }
      for (cdouble& x : v) x = {representable(x.real(), part), representable(x.imag(), part)};
      return v;
    };
    std::tie(t, cvalues) = lay_out<cdouble>(s, draw, make);
    for (const cdouble& x : cvalues) values.push_back(x.real());
  } else if (is_fp8(d)) {
    const std::vector<uint8_t> codes = fp8_codes(d, e.lo, e.hi);
    auto draw = [&](const Shape& shape) {
      std::vector<uint8_t> v(numel(shape));
      for (uint8_t& c : v) c = codes[std::uniform_int_distribution<size_t>(0, codes.size() - 1)(rng)];
      for (size_t i = 3; !e.specials.empty() && i < v.size(); i += 7) {
        const double sp = e.specials[(i / 7) % e.specials.size()];
        if (!std::isinf(sp) || d == DType::Float8_e5m2) v[i] = fp8_code_of(sp, d);  // e4m3fn holds no inf
      }
      if (e.condition) {
        std::vector<double> x(v.size());
        for (size_t i = 0; i < v.size(); ++i) x[i] = fp8_decode(v[i], d);
        e.condition(input, shape, x);
        for (size_t i = 0; i < v.size(); ++i) v[i] = fp8_code_of(x[i], d);
      }
      return v;
    };
    std::vector<uint8_t> logical;
    std::tie(t, logical) = lay_out<uint8_t>(s, draw, make);
    for (uint8_t c : logical) values.push_back(fp8_decode(c, d));
  } else {
    auto draw = [&](const Shape& shape) {
      std::vector<double> v(numel(shape));
      for (double& x : v)
        x = s.ints ? double(std::uniform_int_distribution<int64_t>(s.ints->lo, s.ints->hi - 1)(rng))
                   : representable(dist(rng), d);
      for (size_t i = 3; !s.ints && mantissa_bits(d) && !e.specials.empty() && i < v.size(); i += 7)
        v[i] = e.specials[(i / 7) % e.specials.size()];
      if (e.condition && !s.ints) {
        e.condition(input, shape, v);
        for (double& x : v) x = representable(x, d);
      }
      return v;
    };
    std::tie(t, values) = lay_out<double>(s, draw, make);
  }
  if (cvalues.empty())
    for (double x : values) cvalues.push_back(x);
  in.tensors.push_back(t);
  in.values.push_back(std::move(values));
  in.cvalues.push_back(std::move(cvalues));
  in.shapes.push_back(s.shape);
}

// out's elements, row-major, as complex double (FP8 decoded from its codes
// here, never by kiln's converter).
std::vector<cdouble> values_of(const Tensor& t) {
  std::vector<cdouble> v;
  if (is_fp8(t.dtype())) {
    const Tensor c = t.contiguous();
    const uint8_t* p = static_cast<const uint8_t*>(c.data_ptr());
    for (int64_t i = 0; i < c.numel(); ++i) v.push_back(fp8_decode(p[i], t.dtype()));
  } else if (is_complex(t.dtype())) {
    const Tensor c = t.to(DType::Complex128).contiguous();
    v.assign(c.data<complex128>(), c.data<complex128>() + c.numel());
  } else {
    const Tensor c = t.to(DType::Float64).contiguous();
    v.assign(c.data<double>(), c.data<double>() + c.numel());
  }
  return v;
}

bool matches(double g, double w, double tol, double floor) {
  if (std::isnan(w)) return std::isnan(g);
  if (std::isinf(w)) return g == w;
  return std::fabs(g - w) <= tol * std::max(std::fabs(w), floor);
}

// "" when got matches want within the entry's tolerance, else the first miss.
std::string compare(const std::vector<cdouble>& got, const std::vector<cdouble>& want, DType out_dtype,
                    const Entry& e) {
  if (got.size() != want.size())
    return "got " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size());
  const double tol = e.ulps * eps(out_dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    const cdouble g = got[i], w = want[i];
    const bool finite = std::isfinite(w.real()) && std::isfinite(w.imag());
    const bool ok =
        finite ? std::isfinite(g.real()) && std::isfinite(g.imag()) &&
                     std::abs(g - w) <= tol * std::max(std::abs(w), e.floor)
               : matches(g.real(), w.real(), tol, e.floor) && matches(g.imag(), w.imag(), tol, e.floor);
    if (ok) continue;
    std::ostringstream os;
    os << std::setprecision(17) << "element " << i << ": got ";
    if (g.imag() == 0 && w.imag() == 0)
      os << g.real() << ", want " << w.real();
    else
      os << g << ", want " << w;
    os << " (tolerance " << tol << " relative)";
    return os.str();
  }
  return "";
}

// The message of a caught exception, and whether it is of the kind r names.
std::string what(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return "";
}
bool raised(std::exception_ptr error, const Raises& r) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& ex) {
    return r.matches(ex);
  }
  return false;
}

Device device_of(DeviceKind k) { return Device{k, 0}; }

uint64_t seed_of(const std::string& s) { return std::hash<std::string>()(s); }

TEST(OpTable, EveryRegisteredOpHasAnEntryAndEveryEntryARegisteredOp) {
  std::set<std::string> covered;
  for (const Entry& e : entries()) covered.insert(e.op);
  std::set<std::string> registered;
  for (const ops::OpInfo& op : ops::all_ops()) {
    registered.insert(op.name);
    EXPECT_TRUE(covered.count(op.name)) << "registered op " << op.name << " has no op table entry";
    EXPECT_TRUE(op.has_kernel(DeviceKind::CPU)) << "registered op " << op.name << " has no CPU kernel";
  }
  for (const std::string& name : covered)
    EXPECT_TRUE(registered.count(name)) << "op table entry " << name << " names no registered op";
}

// The walker's FP8 decoder against values the OCP FP8 definition fixes.
TEST(OpTable, Fp8DecodeFollowsTheFormats) {
  const DType e4 = DType::Float8_e4m3fn, e5 = DType::Float8_e5m2;
  EXPECT_EQ(fp8_decode(0x38, e4), 1.0);
  EXPECT_EQ(fp8_decode(0x7e, e4), 448.0);
  EXPECT_EQ(fp8_decode(0xfe, e4), -448.0);
  EXPECT_EQ(fp8_decode(0x08, e4), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(fp8_decode(0x01, e4), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(fp8_decode(0x7f, e4)));
  EXPECT_EQ(fp8_decode(0x78, e4), 256.0);  // S.1111.000 is finite in e4m3fn
  EXPECT_EQ(fp8_decode(0x3c, e5), 1.0);
  EXPECT_EQ(fp8_decode(0x7b, e5), 57344.0);
  EXPECT_EQ(fp8_decode(0x01, e5), std::ldexp(1.0, -16));
  EXPECT_EQ(fp8_decode(0x7c, e5), INFINITY);
  EXPECT_EQ(fp8_decode(0xfc, e5), -INFINITY);
  EXPECT_TRUE(std::isnan(fp8_decode(0x7d, e5)));
  EXPECT_TRUE(std::signbit(fp8_decode(0x80, e5)));
  EXPECT_EQ(fp8_codes(e4, -INFINITY, INFINITY).size(), 253u);  // 256 less NaN, NaN and -0
  EXPECT_EQ(fp8_codes(e5, -INFINITY, INFINITY).size(), 247u);  // less 6 NaNs, 2 infinities, -0
}

// t's copy on `device` with t's layout (strides, broadcast dims), so every
// shape class reaches the device's kernels as it reaches the CPU's.
Tensor on_device(const Tensor& t, Device device) {
  if (!t.defined() || same_device(t.device(), device)) return t;
  Tensor base = t;  // without its broadcast (stride 0) dims
  for (int d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.shape()[d] > 1) base = base.narrow(d, 0, 1);
  Tensor copy = empty_strided(base.sizes(), base.stride_vec(), t.dtype(), device);
  copy.copy_(base);
  return copy.expand(t.sizes());
}

// Walks every entry x dtype x shape class on every device kind whose kernel
// the op has: the result against the oracle, and on a device other than the
// CPU also against the CPU's result and for the device it landed on.
int walk_every_entry() {
  std::map<std::string, const ops::OpInfo*> info;
  for (const ops::OpInfo& op : ops::all_ops()) info[op.name] = &op;
  int cases = 0;
  for (const Entry& e : entries()) {
    if (!info.count(e.op)) {
      ADD_FAILURE() << e.op << " is not registered";
      continue;
    }
    for (DType d : e.dtypes) {
      for (ShapeClass c : kShapeClasses) {
        const std::vector<InputSpec> specs = e.shapes(c);
        if (specs.empty()) continue;
        std::mt19937_64 rng(seed_of(e.op) ^ uint64_t(d) * 131 ^ uint64_t(c));
        Inputs in;
        for (const InputSpec& s : specs) make_input(s, d, e, rng, in);
        const std::string where = e.op + " " + name(d) + " " + name(c);
        Tensor cpu_out;
        for (DeviceKind k : {DeviceKind::CPU, DeviceKind::CUDA}) {
          if (!info[e.op]->has_kernel(k) || (e.host_only && k != DeviceKind::CPU)) continue;
          const Device device = device_of(k);
          SCOPED_TRACE(where + " on " + device.str());
          std::vector<Tensor> args;
          for (const Tensor& t : in.tensors) args.push_back(on_device(t, device));
          Tensor out;
          std::exception_ptr error;
          try {
            out = e.call(args);
          } catch (const std::exception&) {
            error = std::current_exception();
          }
          if (out.defined() && k != DeviceKind::CPU && !args.empty()) {
            EXPECT_EQ(out.device(), device) << "the result is not on its inputs' device";
          }
          if (out.defined()) out = out.cpu();
          std::vector<cdouble> want;
          try {
            if (is_complex(d)) {
              if (!e.complex_oracle)
                throw std::logic_error("a complex dtype in an entry without complex_oracle");
              want = e.complex_oracle(in, out);  // out is undefined when the call threw
            } else {
              const std::vector<double> real = e.oracle(in, out);
              want.assign(real.begin(), real.end());
            }
          } catch (const Raises& r) {
            if (!error)
              ADD_FAILURE() << "returned, expected " << r.kind;
            else
              EXPECT_TRUE(raised(error, r)) << "expected " << r.kind << ", got: " << what(error);
            ++cases;
            continue;
          } catch (const std::exception& ex) {
            ADD_FAILURE() << "oracle: " << ex.what();
            continue;
          }
          if (error) {
            ADD_FAILURE() << "threw: " << what(error);
            continue;
          }
          const std::vector<cdouble> got = values_of(out);
          EXPECT_EQ(compare(got, want, out.dtype(), e), "");
          if (k == DeviceKind::CPU) {
            cpu_out = out;
          } else if (cpu_out.defined()) {
            EXPECT_EQ(compare(got, values_of(cpu_out), out.dtype(), e), "") << "against the CPU";
          }
          ++cases;
        }
      }
    }
  }
  return cases;
}

TEST(OpTable, EveryEntryMatchesItsOracleOnEveryDevice) { EXPECT_GT(walk_every_entry(), 0); }

// The same walk with a second device whose kernels are the CPU's over its own
// (host) memory: what changes is only where tensors live, so every entry that
// passes on the CPU must pass there, its result on the inputs' device. A
// front-end that allocates on the CPU fails here before any real device
// backend exists.
TEST(OpTable, EveryEntryRunsOnASecondDevice) {
  SecondDevice second(/*with_kernels=*/true);
  for (const ops::OpInfo& op : ops::all_ops()) ASSERT_TRUE(op.has_kernel(DeviceKind::CUDA)) << op.name;
  EXPECT_GT(walk_every_entry(), 0);
  EXPECT_GT(second.allocations(), 0u);
}

// Whether the test binary was started with --perf (gtest passes flags it does
// not know through) or with KILN_OP_TABLE_PERF set.
bool perf_requested() {
  if (std::getenv("KILN_OP_TABLE_PERF")) return true;
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(cmdline, arg, '\0'))
    if (arg == "--perf") return true;
  return false;
}

// --perf: one JSON line per entry and dtype with the median time of its perf
// case. Speed is reported, never asserted.
TEST(OpTable, PerfMode) {
  if (!perf_requested()) GTEST_SKIP() << "pass --perf (or set KILN_OP_TABLE_PERF=1) to time each entry";
  for (const Entry& e : entries()) {
    if (e.perf_shapes.empty()) continue;
    for (DType d : e.dtypes) {
      std::mt19937_64 rng(1);
      Inputs in;
      for (const InputSpec& s : e.perf_shapes) make_input(s, d, e, rng, in);
      std::vector<double> times;
      for (int r = 0; r < 12; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        Tensor out = e.call(in.tensors);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(times.begin() + 2, times.end());  // the first two are warm-up
      std::printf("{\"op\": \"%s\", \"dtype\": \"%s\", \"median_s\": %.9g}\n", e.op.c_str(), name(d),
                  times[2 + (times.size() - 2) / 2]);
    }
  }
}

// ---- gradcheck over the table ----------------------------------------------------

// Ops whose front-ends do not record a derivative yet: calling them on an input
// that requires grad raises NotImplementedError (checked here, so an op whose
// derivative lands must leave this list). Every other differentiable entry's
// gradient must match central differences.
const std::set<std::string>& no_derivative_yet() {
  static const std::set<std::string> ops = {
#include "op_table/no_derivative_yet.inc"
  };
  return ops;
}

struct GradcheckResult {
  std::string failure;  // "" when it passed (or did not apply)
  bool applied = false;
  bool no_derivative = false;
};

// Central differences in float64 of f(x) = sum(out(x) * v), for up to 8
// elements of each float input, against autograd::grad.
GradcheckResult gradcheck(const Entry& e, ShapeClass c, std::mt19937_64& rng) {
  GradcheckResult r;
  Entry plain = e;
  plain.specials.clear();  // finite inputs only: differences need a neighbourhood
  Inputs in;
  for (const InputSpec& s : e.shapes(c)) {
    InputSpec flat = s;
    if (flat.layout == InputSpec::Expanded) flat.layout = InputSpec::Contiguous;  // one element, one memory cell
    make_input(flat, DType::Float64, plain, rng, in);
  }
  std::vector<Tensor> args = in.tensors;
  std::vector<size_t> leaves;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].dtype() != DType::Float64 || args[i].numel() == 0) continue;
    args[i] = args[i].detach();
    args[i].requires_grad_(true);
    leaves.push_back(i);
  }
  if (leaves.empty()) return r;
  Tensor out;
  try {
    out = e.call(args);
  } catch (const NotImplementedError& ex) {
    // Another op the entry's call runs (a helper), or a mode whose derivative is
    // undefined (qr's mode='r'), is not the entry's business.
    const std::string msg = ex.what();
    // The message names the op as its front-end does ("[linalg.det]" for linalg_det).
    std::string named = msg.substr(0, msg.find(']') + 1);
    std::replace(named.begin(), named.end(), '.', '_');
    if (msg.find("has no derivative") != std::string::npos && named == "[" + e.op + "]") {
      r.no_derivative = true;
      r.applied = true;
    }
    return r;  // or: the op does not take these inputs in float64
  } catch (const std::exception&) {
    return r;
  }
  if (!out.defined() || !autograd::detail::differentiable_dtype(out.dtype()) || out.numel() == 0) return r;
  r.applied = true;
  if (!out.requires_grad()) {
    r.failure = "the result does not require grad";
    return r;
  }
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(size_t(out.numel()));
  for (double& x : v) x = dist(rng);
  Tensor vt = from_values(v, out.sizes(), out.dtype());
  std::vector<Tensor> wrt;
  for (size_t i : leaves) wrt.push_back(args[i]);
  std::vector<Tensor> grads;
  try {
    const Tensor outs[1] = {out}, vs[1] = {vt};
    grads = autograd::grad(outs, wrt, vs, false, false, /*allow_unused=*/true);
  } catch (const std::exception& ex) {
    r.failure = std::string("backward threw: ") + ex.what();
    return r;
  }
  auto objective = [&](size_t input, int64_t element, double delta) {
    autograd::NoGradGuard no_grad;
    std::vector<Tensor> moved = in.tensors;
    Tensor x = in.tensors[input].to(DType::Float64).contiguous().clone();
    x.data<double>()[element] += delta;
    moved[input] = x;
    const std::vector<cdouble> o = values_of(e.call(moved));
    double f = 0;
    for (size_t k = 0; k < o.size(); ++k) f += o[k].real() * v[k];
    return f;
  };
  for (size_t li = 0; li < leaves.size(); ++li) {
    const size_t input = leaves[li];
    const int64_t n = args[input].numel();
    const std::vector<cdouble> analytic =
        grads[li].defined() ? values_of(grads[li]) : std::vector<cdouble>(size_t(n), 0.0);
    if (int64_t(analytic.size()) != n) {
      r.failure = "input " + std::to_string(input) + ": gradient has " + std::to_string(analytic.size()) +
                  " elements, want " + std::to_string(n);
      return r;
    }
    for (int k = 0; k < 8 && k < n; ++k) {
      const int64_t j = n <= 8 ? k : std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      const double x = in.values[input][size_t(j)];
      const double h = 1e-6 * std::max(1.0, std::fabs(x));
      const double numeric = (objective(input, j, h) - objective(input, j, -h)) / (2 * h);
      const double a = analytic[size_t(j)].real();
      if (!std::isfinite(numeric)) continue;  // a pole or domain edge next to x
      if (std::fabs(a - numeric) > 1e-5 + 1e-4 * std::fabs(numeric)) {
        std::ostringstream os;
        os << std::setprecision(12) << "input " << input << " element " << j << " (x = " << x
           << "): autograd " << a << ", central difference " << numeric;
        r.failure = os.str();
        return r;
      }
    }
  }
  return r;
}

// Every differentiable entry, in float64, over the odd, non-contiguous and
// broadcast shape classes: its gradient against central differences; an op
// listed in op_table/no_derivative_yet.inc must raise instead.
TEST(Autograd, GradcheckEveryOpTableEntry) {
  int checked = 0;
  std::set<std::string> raised_no_derivative;
  std::set<std::string> nondifferentiable;
  for (const ops::OpInfo& op : ops::all_ops())
    if (op.nondifferentiable()) nondifferentiable.insert(op.name);
  for (const Entry& e : entries()) {
    if (nondifferentiable.count(e.op)) continue;
    const bool floats = std::any_of(e.dtypes.begin(), e.dtypes.end(),
                                    [](DType d) { return d == DType::Float32 || d == DType::Float64; });
    if (!floats || e.host_only) continue;
    for (ShapeClass c : {ShapeClass::Scalar, ShapeClass::Odd, ShapeClass::NonContiguous, ShapeClass::Broadcast}) {
      if (e.shapes(c).empty()) continue;
      std::mt19937_64 rng(seed_of(e.op) ^ uint64_t(c) * 977);
      SCOPED_TRACE(e.op + " " + name(c));
      const GradcheckResult r = gradcheck(e, c, rng);
      if (!r.applied) continue;
      if (r.no_derivative) {
        raised_no_derivative.insert(e.op);
        EXPECT_TRUE(no_derivative_yet().count(e.op))
            << e.op << " raised 'no derivative'; add its derivative (or list it in no_derivative_yet.inc)";
        continue;
      }
      EXPECT_FALSE(no_derivative_yet().count(e.op))
          << e.op << " records a derivative now: remove it from op_table/no_derivative_yet.inc";
      EXPECT_EQ(r.failure, "");
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  std::printf("[gradcheck] %d cases checked, %zu ops without a derivative yet\n", checked,
              raised_no_derivative.size());
}

// ---- second-order gradcheck (torch's gradgradcheck idea) ------------------

// Ops whose backward formulas are not twice differentiable yet: their double
// backward (create_graph=true, then a gradient of the gradient) raises
// NotImplementedError. Checked, so an op that starts to pass must leave the list.
const std::set<std::string>& no_double_backward_yet() {
  static const std::set<std::string> ops = {
#include "op_table/no_double_backward_yet.inc"
  };
  return ops;
}

struct GradgradResult {
  std::string failure;  // "" when it passed (or did not apply)
  bool applied = false;
  bool raised = false;  // the double backward raised NotImplementedError
  std::string raised_what;
};

// With g = grad(out, inputs, v, create_graph=true) and F = sum_i <g_i, w_i>
// (random w): autograd's dF/d(inputs) and dF/dv against central differences
// of F computed by a first-order backward (no create_graph), for up to 8
// elements of each float input and of v.
GradgradResult gradgradcheck(const Entry& e, ShapeClass c, std::mt19937_64& rng) {
  GradgradResult r;
  Entry plain = e;
  plain.specials.clear();
  Inputs in;
  for (const InputSpec& s : e.shapes(c)) {
    InputSpec flat = s;
    if (flat.layout == InputSpec::Expanded) flat.layout = InputSpec::Contiguous;
    make_input(flat, DType::Float64, plain, rng, in);
  }
  std::vector<size_t> leaves;
  for (size_t i = 0; i < in.tensors.size(); ++i)
    if (in.tensors[i].dtype() == DType::Float64 && in.tensors[i].numel() > 0) leaves.push_back(i);
  if (leaves.empty()) return r;
  // The first-order gradients of sum(out * v) at `tensors`, as leaves `wrt`.
  auto forward = [&](const std::vector<Tensor>& tensors, std::vector<Tensor>& wrt) {
    std::vector<Tensor> args = tensors;
    wrt.clear();
    for (size_t i : leaves) {
      args[i] = args[i].detach();
      args[i].requires_grad_(true);
      wrt.push_back(args[i]);
    }
    return e.call(args);
  };
  auto first = [&](const Tensor& out, const std::vector<Tensor>& wrt, const Tensor& v, bool create_graph) {
    if (!out.defined() || !out.requires_grad()) return std::vector<Tensor>{};
    const Tensor outs[1] = {out}, vs[1] = {v};
    return autograd::grad(outs, wrt, vs, create_graph, create_graph, /*allow_unused=*/true);
  };
  Tensor out;
  std::vector<Tensor> wrt;
  try {
    autograd::NoGradGuard no_grad;
    out = e.call(in.tensors);
  } catch (const std::exception&) {
    return r;  // the op does not take these inputs in float64
  }
  // float64 results only: second differences need its precision
  if (!out.defined() || out.dtype() != DType::Float64 || out.numel() == 0) return r;
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(size_t(out.numel()));
  for (double& x : v) x = dist(rng);
  Tensor vt = from_values(v, out.sizes(), out.dtype());
  vt.requires_grad_(true);
  Tensor recorded;
  try {
    recorded = forward(in.tensors, wrt);
  } catch (const std::exception&) {
    return r;  // the first-order gradcheck reports these
  }
  std::vector<Tensor> g;
  try {
    g = first(recorded, wrt, vt, /*create_graph=*/true);
  } catch (const NotImplementedError& ex) {
    r.applied = r.raised = true;  // (ops without a first derivative are skipped above)
    r.raised_what = ex.what();
    return r;
  } catch (const std::exception&) {
    return r;  // the first-order gradcheck reports these
  }
  if (g.empty()) return r;
  r.applied = true;
  std::vector<std::vector<double>> w(g.size());
  Tensor f;
  for (size_t li = 0; li < g.size(); ++li) {
    if (!g[li].defined()) continue;
    w[li].resize(size_t(g[li].numel()));
    for (double& x : w[li]) x = dist(rng);
    // A gradient that does not require grad is constant in inputs and v: its
    // second derivatives are 0, which the differences below check.
    if (!g[li].requires_grad()) continue;
    const Tensor term = sum(mul(g[li], from_values(w[li], g[li].sizes(), g[li].dtype())));
    f = f.defined() ? add(f, term) : term;
  }
  std::vector<Tensor> gg_wrt = wrt;
  gg_wrt.push_back(vt);
  std::vector<Tensor> gg(gg_wrt.size());
  if (f.defined()) {
    try {
      const Tensor fs[1] = {f};
      gg = autograd::grad(fs, gg_wrt, {}, false, false, /*allow_unused=*/true);
    } catch (const NotImplementedError& ex) {
      r.raised = true;
      r.raised_what = ex.what();
      return r;
    } catch (const std::exception& ex) {
      r.failure = std::string("double backward threw: ") + ex.what();
      return r;
    }
  }
  // F at inputs/v moved by delta in one element (input == leaves.size(): v).
  auto objective = [&](size_t li, int64_t element, double delta) {
    std::vector<Tensor> moved = in.tensors;
    Tensor vm = vt.detach();
    if (li < leaves.size()) {
      Tensor x = in.tensors[leaves[li]].to(DType::Float64).contiguous().clone();
      x.data<double>()[element] += delta;
      moved[leaves[li]] = x;
    } else {
      vm = vm.clone();
      vm.data<double>()[element] += delta;
    }
    std::vector<Tensor> leaves_m;
    const Tensor out_m = forward(moved, leaves_m);
    const std::vector<Tensor> gm = first(out_m, leaves_m, vm, false);
    double total = 0;
    for (size_t k = 0; k < gm.size() && k < w.size(); ++k) {
      if (!gm[k].defined() || w[k].empty()) continue;
      const std::vector<cdouble> gv = values_of(gm[k]);
      for (size_t j = 0; j < gv.size(); ++j) total += gv[j].real() * w[k][j];
    }
    return total;
  };
  for (size_t li = 0; li < gg_wrt.size(); ++li) {
    const int64_t n = gg_wrt[li].numel();
    const std::vector<cdouble> analytic =
        gg[li].defined() ? values_of(gg[li]) : std::vector<cdouble>(size_t(n), 0.0);
    const std::string what = li < leaves.size() ? "input " + std::to_string(leaves[li]) : std::string("v");
    if (int64_t(analytic.size()) != n) {
      r.failure = what + ": second-order gradient has " + std::to_string(analytic.size()) +
                  " elements, want " + std::to_string(n);
      return r;
    }
    for (int k = 0; k < 8 && k < n; ++k) {
      const int64_t j = n <= 8 ? k : std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      const double x = li < leaves.size() ? in.values[leaves[li]][size_t(j)] : v[size_t(j)];
      const double h = 1e-6 * std::max(1.0, std::fabs(x));
      const double numeric = (objective(li, j, h) - objective(li, j, -h)) / (2 * h);
      const double a = analytic[size_t(j)].real();
      if (!std::isfinite(numeric)) continue;
      if (std::fabs(a - numeric) > 1e-5 + 1e-3 * std::fabs(numeric)) {
        std::ostringstream os;
        os << std::setprecision(12) << what << " element " << j << " (x = " << x << "): autograd " << a
           << ", central difference " << numeric;
        r.failure = os.str();
        return r;
      }
    }
  }
  return r;
}

// Every differentiable entry with a derivative, float64, odd shapes: its
// double backward against central differences of its first-order gradient.
// An op listed in op_table/no_double_backward_yet.inc must raise for at least
// one of its entries (others may pass, e.g. linalg_svd with
// full_matrices=False); no entry may return a wrong second derivative.
TEST(Autograd, GradgradcheckOpTableFamilies) {
  int checked = 0;
  std::set<std::string> nondifferentiable, raised;
  for (const ops::OpInfo& op : ops::all_ops())
    if (op.nondifferentiable()) nondifferentiable.insert(op.name);
  for (const Entry& e : entries()) {
    if (nondifferentiable.count(e.op) || no_derivative_yet().count(e.op) || e.host_only) continue;
    const bool floats = std::any_of(e.dtypes.begin(), e.dtypes.end(),
                                    [](DType d) { return d == DType::Float32 || d == DType::Float64; });
    if (!floats || e.shapes(ShapeClass::Odd).empty()) continue;
    std::mt19937_64 rng(seed_of(e.op) ^ 0x9e3779b97f4a7c15ull);
    SCOPED_TRACE(e.op);
    const GradgradResult r = gradgradcheck(e, ShapeClass::Odd, rng);
    if (!r.applied) continue;
    if (r.raised) {
      raised.insert(e.op);
      EXPECT_TRUE(no_double_backward_yet().count(e.op))
          << e.op << " double backward raised: " << r.raised_what
          << " (fix its formula, or list it in op_table/no_double_backward_yet.inc)";
      continue;
    }
    EXPECT_EQ(r.failure, "");
    ++checked;
  }
  for (const std::string& op : no_double_backward_yet())
    EXPECT_TRUE(raised.count(op)) << op
                                  << "'s double backward raises no more: remove it from "
                                     "op_table/no_double_backward_yet.inc";
  EXPECT_GT(checked, 0);
  std::printf("[gradgradcheck] %d cases checked, %zu ops without a double backward yet\n", checked,
              raised.size());
}

// ---- complex gradcheck over the table --------------------------------------------

// Ops whose complex gradients kiln does not implement yet: with a complex
// input that requires grad they raise NotImplementedError (checked here, so an
// op whose complex formula lands must leave the list). Ops of
// no_derivative_yet.inc raise too and are not repeated there.
const std::set<std::string>& complex_no_derivative_yet() {
  static const std::set<std::string> ops = {
#include "op_table/complex_no_derivative_yet.inc"
  };
  return ops;
}

// The complex128 walk of an entry that lists complex dtypes. torch's
// convention ("Autograd for Complex Numbers"): for a real loss L, the gradient
// of z = x + iy is the conjugate Wirtinger derivative times two,
// 2 dL/dconj(z) = dL/dx + i dL/dy, and backward with grad_output v computes
// the gradient of L = Re(sum(conj(v) * out)) (for a real out, v is real and
// L = sum(v * out)). So each checked element's gradient must equal the central
// differences of L along its real part plus i times those along its imaginary
// part. A real input of a complex walk (a weight, a real operand) is checked
// as in the float64 walk: its gradient is dL/dx.
GradcheckResult complex_gradcheck(const Entry& e, ShapeClass c, std::mt19937_64& rng) {
  GradcheckResult r;
  Entry plain = e;
  plain.specials.clear();
  Inputs in;
  for (const InputSpec& s : e.shapes(c)) {
    InputSpec flat = s;
    if (flat.layout == InputSpec::Expanded) flat.layout = InputSpec::Contiguous;
    make_input(flat, DType::Complex128, plain, rng, in);
  }
  std::vector<Tensor> args = in.tensors;
  std::vector<size_t> leaves;
  for (size_t i = 0; i < args.size(); ++i) {
    const DType d = args[i].dtype();
    if ((d != DType::Complex128 && d != DType::Float64) || args[i].numel() == 0) continue;
    args[i] = args[i].detach();
    args[i].requires_grad_(true);
    leaves.push_back(i);
  }
  if (leaves.empty()) return r;
  Tensor out;
  try {
    out = e.call(args);
  } catch (const NotImplementedError& ex) {
    // "[op] has no derivative", or "[linalg.inv] complex gradients are not
    // implemented" (a front-end's name may differ from its op's).
    const std::string msg = ex.what();
    if ((msg.find("derivative") != std::string::npos && msg.rfind("[" + e.op + "]", 0) == 0) ||
        msg.find("complex gradients are not implemented") != std::string::npos)
      r.no_derivative = r.applied = true;
    return r;
  } catch (const std::exception&) {
    return r;
  }
  if (!out.defined() || !autograd::detail::differentiable_dtype(out.dtype()) || out.numel() == 0) return r;
  r.applied = true;
  if (!out.requires_grad()) {
    r.failure = "the result does not require grad";
    return r;
  }
  const bool cout = is_complex(out.dtype());
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<cdouble> v(size_t(out.numel()));
  for (cdouble& x : v) x = {dist(rng), cout ? dist(rng) : 0.0};
  Tensor vt = cout ? from_values(v, out.sizes(), out.dtype())
                   : from_values(std::vector<double>(size_t(out.numel()), 0.0), out.sizes(), out.dtype());
  if (!cout)
    for (size_t k = 0; k < v.size(); ++k) vt.data<double>()[k] = v[k].real();
  std::vector<Tensor> wrt;
  for (size_t i : leaves) wrt.push_back(args[i]);
  std::vector<Tensor> grads;
  try {
    const Tensor outs[1] = {out}, vs[1] = {vt};
    grads = autograd::grad(outs, wrt, vs, false, false, /*allow_unused=*/true);
  } catch (const std::exception& ex) {
    r.failure = std::string("backward threw: ") + ex.what();
    return r;
  }
  // L = Re(sum(conj(v) * out)) with input `input`'s element moved by delta.
  auto objective = [&](size_t input, int64_t element, cdouble delta) {
    autograd::NoGradGuard no_grad;
    std::vector<Tensor> moved = in.tensors;
    Tensor x = in.tensors[input].contiguous().clone();
    if (is_complex(x.dtype()))
      x.data<complex128>()[element] += delta;
    else
      x.data<double>()[element] += delta.real();
    moved[input] = x;
    const std::vector<cdouble> o = values_of(e.call(moved));
    double f = 0;
    for (size_t k = 0; k < o.size(); ++k) f += (std::conj(v[k]) * o[k]).real();
    return f;
  };
  for (size_t li = 0; li < leaves.size(); ++li) {
    const size_t input = leaves[li];
    const bool cin = is_complex(args[input].dtype());
    const int64_t n = args[input].numel();
    const std::vector<cdouble> analytic =
        grads[li].defined() ? values_of(grads[li]) : std::vector<cdouble>(size_t(n), 0.0);
    if (int64_t(analytic.size()) != n) {
      r.failure = "input " + std::to_string(input) + ": gradient has " + std::to_string(analytic.size()) +
                  " elements, want " + std::to_string(n);
      return r;
    }
    for (int k = 0; k < 8 && k < n; ++k) {
      const int64_t j = n <= 8 ? k : std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      const cdouble x = in.cvalues[input][size_t(j)];
      const double h = 1e-6 * std::max(1.0, std::abs(x));
      const double dre = (objective(input, j, h) - objective(input, j, -h)) / (2 * h);
      const double dim =
          cin ? (objective(input, j, cdouble(0, h)) - objective(input, j, cdouble(0, -h))) / (2 * h) : 0.0;
      const cdouble numeric(dre, dim), a = analytic[size_t(j)];
      if (!std::isfinite(dre) || !std::isfinite(dim)) continue;  // a pole or branch cut next to x
      if (std::abs(a - numeric) > 1e-5 + 1e-4 * std::abs(numeric)) {
        std::ostringstream os;
        os << std::setprecision(12) << "input " << input << " element " << j << " (z = " << x
           << "): autograd " << a << ", central differences " << numeric;
        r.failure = os.str();
        return r;
      }
    }
  }
  return r;
}

// Every differentiable entry that lists a complex dtype, in complex128, over
// the scalar, odd, non-contiguous and broadcast shape classes.
TEST(Autograd, ComplexGradcheckEveryOpTableEntry) {
  int checked = 0;
  std::set<std::string> nondifferentiable, passed, raised;
  for (const ops::OpInfo& op : ops::all_ops())
    if (op.nondifferentiable()) nondifferentiable.insert(op.name);
  for (const Entry& e : entries()) {
    if (nondifferentiable.count(e.op) || e.host_only) continue;
    if (std::none_of(e.dtypes.begin(), e.dtypes.end(), [](DType d) { return is_complex(d); })) continue;
    for (ShapeClass c :
         {ShapeClass::Scalar, ShapeClass::Odd, ShapeClass::NonContiguous, ShapeClass::Broadcast}) {
      if (e.shapes(c).empty()) continue;
      std::mt19937_64 rng(seed_of(e.op) ^ uint64_t(c) * 1931);
      SCOPED_TRACE(e.op + " complex128 " + name(c));
      const GradcheckResult r = complex_gradcheck(e, c, rng);
      if (!r.applied) continue;
      if (r.no_derivative) {
        raised.insert(e.op);
        EXPECT_TRUE(complex_no_derivative_yet().count(e.op) || no_derivative_yet().count(e.op))
            << e.op << " raised for complex inputs; add its complex derivative (or list it in "
            << "complex_no_derivative_yet.inc)";
        continue;
      }
      passed.insert(e.op);
      EXPECT_EQ(r.failure, "");
      ++checked;
    }
  }
  for (const std::string& op : passed)
    EXPECT_FALSE(complex_no_derivative_yet().count(op) && !raised.count(op))
        << op << " has complex gradients now: remove it from op_table/complex_no_derivative_yet.inc";
  EXPECT_GT(checked, 0);
  std::printf("[complex gradcheck] %d cases checked, %zu ops without complex gradients yet\n", checked,
              raised.size());
}

}  // namespace
}  // namespace op_table
