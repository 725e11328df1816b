// CPU kernels of arange, linspace and logspace (core/factory_ops.h): value(i)
// is computed per element (in double, or int64 for integral aranges) and cast
// to the output dtype, in parallel chunks.
#include <cmath>

#include "core/cast.h"
#include "core/factory_ops.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// Fills a contiguous 1-D tensor with value(i), computed in double (int64 for
// integer aranges so large integer ranges stay exact).
template <typename Fn>
void fill_indexed(const Tensor& t, Fn value, const char* op) {
  dispatch<kIntSet | kFloatSet | kFp8Set | kComplexSet>(t.dtype(), op, [&]<typename T>() {
    T* p = static_cast<T*>(t.data_ptr());
    parallel_for(0, t.numel(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = cast<T>(value(i));
    });
  });
}

void arange(const Tensor& out, const Scalar& start, const Scalar& step) {
  if (start.is_integral() && step.is_integral()) {
    const int64_t a = start.to_int64(), c = step.to_int64();
    fill_indexed(
        out, [&](int64_t i) { return int64_t(uint64_t(a) + uint64_t(i) * uint64_t(c)); }, "arange");
    return;
  }
  const double s = start.to_double(), st = step.to_double();
  fill_indexed(
      out, [&](int64_t i) { return s + double(i) * st; }, "arange");
}

// Symmetric evaluation (as torch): the first half steps up from start, the
// second down from end, so the last element is exactly end.
double linspace_at(double start, double end, int64_t steps, double step, int64_t i) {
  if (steps == 1) return start;
  return i < steps / 2 ? start + step * double(i) : end - step * double(steps - 1 - i);
}

void linspace(const Tensor& out, double start, double end) {
  const int64_t steps = out.numel();
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  fill_indexed(
      out, [&](int64_t i) { return linspace_at(start, end, steps, step, i); }, "linspace");
}

void logspace(const Tensor& out, double start, double end, double base) {
  const int64_t steps = out.numel();
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  fill_indexed(
      out, [&](int64_t i) { return std::pow(base, linspace_at(start, end, steps, step, i)); }, "logspace");
}

}  // namespace

void register_factories_kernels() {
  ops::arange.set_kernel(DeviceKind::CPU, arange);
  ops::linspace.set_kernel(DeviceKind::CPU, linspace);
  ops::logspace.set_kernel(DeviceKind::CPU, logspace);
}

}  // namespace kiln::cpu
