// Walks the op table (op_table/table.h): every entry x dtype x shape class x
// compiled device against its float64 oracle, and against the CPU result on
// other devices; and checks that every registered op has an entry.
// KILN_OP_TABLE_PERF=1 also times each entry's perf case (printed, not checked).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "op_table/table.h"
#include "ops/registry/all.h"

namespace op_table {
namespace {

using namespace kiln;

// Significant bits of a float dtype (0: not a float this test rounds to).
int mantissa_bits(DType d) {
  switch (d) {
    case DType::Float64:
      return 53;
    case DType::Float32:
      return 24;
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

Tensor from_values(const std::vector<double>& v, const Shape& shape, DType d) {
  return from_buffer_copy(v.data(), shape, DType::Float64).to(d);
}

// Builds one input: random representable values for the logical shape, laid
// out as the spec says.
void make_input(const InputSpec& s, DType walk, const Entry& e, std::mt19937_64& rng, Inputs& in) {
  const DType d = s.ints ? s.ints->dtype : walk;
  std::uniform_real_distribution<double> dist(e.lo, e.hi);
  auto draw = [&](const Shape& shape) {
    std::vector<double> v(numel(shape));
    for (double& x : v)
      x = s.ints ? double(std::uniform_int_distribution<int64_t>(s.ints->lo, s.ints->hi - 1)(rng))
                 : representable(dist(rng), d);
    for (size_t i = 3; !s.ints && mantissa_bits(d) && !e.specials.empty() && i < v.size(); i += 7)
      v[i] = e.specials[(i / 7) % e.specials.size()];
    if (e.condition && !s.ints) {
      e.condition(in.tensors.size(), shape, v);
      for (double& x : v) x = representable(x, d);
    }
    return v;
  };
  const int64_t n = numel(s.shape);
  std::vector<double> logical;
  Tensor t;
  switch (s.layout) {
    case InputSpec::Contiguous:
      logical = draw(s.shape);
      t = from_values(logical, s.shape, d);
      break;
    case InputSpec::Transposed: {  // physical [reversed shape], then all dims reversed
      logical = draw(s.shape);
      Shape rev(s.shape.rbegin(), s.shape.rend());
      std::vector<double> phys(n);
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        std::reverse(idx.begin(), idx.end());
        phys[ravel(idx, rev)] = logical[i];
      }
      std::vector<int> perm(s.shape.size());
      std::iota(perm.rbegin(), perm.rend(), 0);
      t = from_values(phys, rev, d).permute(perm);
      break;
    }
    case InputSpec::Strided: {  // last dim doubled, every second element taken
      logical = draw(s.shape);
      Shape wide = s.shape;
      wide.back() *= 2;
      std::vector<double> phys(numel(wide), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        idx.back() *= 2;
        phys[ravel(idx, wide)] = logical[i];
      }
      t = from_values(phys, wide, d).slice(-1, 0, wide.back(), 2);
      break;
    }
    case InputSpec::Expanded: {
      const std::vector<double> base = draw(s.base);
      logical.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        Shape idx = unravel(i, s.shape);
        const size_t off = s.shape.size() - s.base.size();
        Shape bidx(s.base.size());
        for (size_t k = 0; k < s.base.size(); ++k) bidx[k] = s.base[k] == 1 ? 0 : idx[off + k];
        logical[i] = base[ravel(bidx, s.base)];
      }
      t = from_values(base, s.base, d).expand(s.shape);
      break;
    }
  }
  in.tensors.push_back(t);
  in.values.push_back(std::move(logical));
  in.shapes.push_back(s.shape);
}

std::vector<double> values_of(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

// "" when got matches want within the entry's tolerance, else the first miss.
std::string compare(const std::vector<double>& got, const std::vector<double>& want, DType out_dtype,
                    const Entry& e) {
  if (got.size() != want.size())
    return "got " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size());
  const double tol = e.ulps * eps(out_dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) ? std::isnan(g)
                      : (std::isinf(w) ? g == w : std::fabs(g - w) <= tol * std::max(std::fabs(w), e.floor)))
      continue;
    std::ostringstream os;
    os << "element " << i << ": got " << g << ", want " << w << " (tolerance " << tol << " relative)";
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

TEST(OpTable, EveryEntryMatchesItsOracleOnEveryDevice) {
  std::map<std::string, const ops::OpInfo*> info;
  for (const ops::OpInfo& op : ops::all_ops()) info[op.name] = &op;
  int cases = 0;
  for (const Entry& e : entries()) {
    ASSERT_TRUE(info.count(e.op)) << e.op;
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
          if (!info[e.op]->has_kernel(k)) continue;
          SCOPED_TRACE(where + " on " + device_of(k).str());
          ASSERT_EQ(k, DeviceKind::CPU) << "no way yet to move inputs to " << device_of(k).str();
          Tensor out;
          std::exception_ptr error;
          try {
            out = e.call(in.tensors);
          } catch (const std::exception&) {
            error = std::current_exception();
          }
          std::vector<double> want;
          try {
            want = e.oracle(in, out);  // out is undefined when the call threw
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
          const std::vector<double> got = values_of(out);
          EXPECT_EQ(compare(got, want, out.dtype(), e), "");
          if (k == DeviceKind::CPU)
            cpu_out = out;
          else
            EXPECT_EQ(compare(got, values_of(cpu_out), out.dtype(), e), "") << "against the CPU";
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
}

// KILN_OP_TABLE_PERF=1: one JSON line per entry and dtype with the median time
// of its perf case. Speed is reported, never asserted.
TEST(OpTable, PerfMode) {
  if (!std::getenv("KILN_OP_TABLE_PERF")) GTEST_SKIP() << "set KILN_OP_TABLE_PERF=1 to time each entry";
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

}  // namespace
}  // namespace op_table
