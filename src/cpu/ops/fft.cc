// CPU kernels of the transforms (ops/registry/fft.h) on FFTW 3 (Debian's
// libfftw3-dev; pocketfft, what NumPy and torch use, is not packaged). Each
// call is one guru64 plan: the transformed dims as FFTW's dims and every other
// dim as a "howmany" loop, with the tensors' own strides, so a transposed or
// expanded input is read where it lies. Plans are made with FFTW_ESTIMATE
// (no trial runs) under one lock, since FFTW's planner is not thread-safe,
// and kept for the next call of the same layout; executing them is
// thread-safe. A large batch is split into one plan per thread along its
// longest loop.
#include <fftw3.h>

#include <algorithm>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu/ops/register.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

enum class Kind { Forward, Backward, R2C, C2R };

// FFTW's double (fftw_) and single (fftwf_) precision APIs under one name:
// plan (FFTW_ESTIMATE: no trial runs, the arrays untouched) and execute on
// other arrays of the same layout and alignment (FFTW's new-array execute).
template <typename R>
struct Fftw;
template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Cpx = fftw_complex;
  static Plan make(Kind k, int r, const fftw_iodim64* d, int hr, const fftw_iodim64* hd, void* in,
                   void* out) {
    switch (k) {
      case Kind::Forward:
      case Kind::Backward:
        return fftw_plan_guru64_dft(r, d, hr, hd, static_cast<Cpx*>(in), static_cast<Cpx*>(out),
                                    k == Kind::Forward ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
      case Kind::R2C:
        return fftw_plan_guru64_dft_r2c(r, d, hr, hd, static_cast<double*>(in), static_cast<Cpx*>(out),
                                        FFTW_ESTIMATE);
      case Kind::C2R:
        return fftw_plan_guru64_dft_c2r(r, d, hr, hd, static_cast<Cpx*>(in), static_cast<double*>(out),
                                        FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    }
    return nullptr;
  }
  static void execute(Kind k, Plan p, void* in, void* out) {
    if (k == Kind::R2C)
      fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Cpx*>(out));
    else if (k == Kind::C2R)
      fftw_execute_dft_c2r(p, static_cast<Cpx*>(in), static_cast<double*>(out));
    else
      fftw_execute_dft(p, static_cast<Cpx*>(in), static_cast<Cpx*>(out));
  }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
  static int alignment(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
};
template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Cpx = fftwf_complex;
  static Plan make(Kind k, int r, const fftw_iodim64* d, int hr, const fftw_iodim64* hd, void* in,
                   void* out) {
    switch (k) {
      case Kind::Forward:
      case Kind::Backward:
        return fftwf_plan_guru64_dft(r, d, hr, hd, static_cast<Cpx*>(in), static_cast<Cpx*>(out),
                                     k == Kind::Forward ? FFTW_FORWARD : FFTW_BACKWARD, FFTW_ESTIMATE);
      case Kind::R2C:
        return fftwf_plan_guru64_dft_r2c(r, d, hr, hd, static_cast<float*>(in), static_cast<Cpx*>(out),
                                         FFTW_ESTIMATE);
      case Kind::C2R:
        return fftwf_plan_guru64_dft_c2r(r, d, hr, hd, static_cast<Cpx*>(in), static_cast<float*>(out),
                                         FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
    }
    return nullptr;
  }
  static void execute(Kind k, Plan p, void* in, void* out) {
    if (k == Kind::R2C)
      fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Cpx*>(out));
    else if (k == Kind::C2R)
      fftwf_execute_dft_c2r(p, static_cast<Cpx*>(in), static_cast<float*>(out));
    else
      fftwf_execute_dft(p, static_cast<Cpx*>(in), static_cast<Cpx*>(out));
  }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
  static int alignment(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
};

// One transform's geometry in FFTW's terms: dims (transformed, in `dims`'
// order) and loops (every other dim of size > 1), each with its size and the
// input and output strides in elements of each side's type.
struct Geometry {
  std::vector<fftw_iodim64> dims, loops;
};

// `shape` is the logical (complex-side for c2r, real-side for r2c) size of
// each dim; for the last transformed dim of r2c / c2r that is the real n,
// while the strides step over the arrays as they are.
Geometry geometry(std::span<const int64_t> shape, std::span<const int64_t> in_strides,
                  std::span<const int64_t> out_strides, std::span<const int> dims) {
  Geometry g;
  for (int d : dims) g.dims.push_back({shape[size_t(d)], in_strides[size_t(d)], out_strides[size_t(d)]});
  for (size_t d = 0; d < shape.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), int(d)) != dims.end() || shape[d] == 1) continue;
    g.loops.push_back({shape[d], in_strides[d], out_strides[d]});
  }
  return g;
}

// Plans made once and kept: planning costs about as much as a small
// transform. A plan is keyed by everything it depends on (precision, kind,
// geometry, the arrays' alignment); past kMaxPlans the cache starts over
// (plans in use stay alive through their shared_ptr).
class PlanCache {
 public:
  using Key = std::vector<int64_t>;
  template <typename Make>
  std::shared_ptr<void> get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(m_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    std::shared_ptr<void> p = make();
    std::map<Key, std::shared_ptr<void>> dropped;
    std::lock_guard<std::mutex> lock(m_);
    if (plans_.size() >= kMaxPlans) dropped.swap(plans_);
    return plans_.emplace(key, std::move(p)).first->second;
  }

 private:
  static constexpr size_t kMaxPlans = 256;
  std::mutex m_;
  std::map<Key, std::shared_ptr<void>> plans_;
};

PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;  // never destroyed: plans may be used until exit
  return *cache;
}

template <typename R>
std::shared_ptr<void> plan_for(Kind kind, const Geometry& g, void* in, void* out) {
  using F = Fftw<R>;
  PlanCache::Key key{int64_t(sizeof(R)), int64_t(kind), F::alignment(in), F::alignment(out),
                     int64_t(g.dims.size())};
  for (const auto* v : {&g.dims, &g.loops})
    for (const fftw_iodim64& d : *v) key.insert(key.end(), {d.n, d.is, d.os});
  return plan_cache().get(key, [&] {
    typename F::Plan p;
    {
      std::lock_guard<std::mutex> lock(planner_lock());
      p = F::make(kind, int(g.dims.size()), g.dims.data(), int(g.loops.size()), g.loops.data(), in, out);
    }
    KILN_CHECK(p != nullptr, Error, "[fft] FFTW could not plan this transform");
    return std::shared_ptr<void>(static_cast<void*>(p), [](void* q) {
      std::lock_guard<std::mutex> lock(planner_lock());
      F::destroy(static_cast<typename F::Plan>(q));
    });
  });
}

// Runs the transform `kind` over g from `in` into `out` (elements of
// in_size / out_size bytes): one plan, or, for a batch worth splitting, one
// per thread along the longest loop.
template <typename R>
void run(Kind kind, const Geometry& g, int64_t work, void* in, size_t in_size, void* out, size_t out_size) {
  using F = Fftw<R>;
  auto execute = [&](const Geometry& part, int64_t in_off, int64_t out_off) {
    char* i = static_cast<char*>(in) + in_off * int64_t(in_size);
    char* o = static_cast<char*>(out) + out_off * int64_t(out_size);
    const std::shared_ptr<void> p = plan_for<R>(kind, part, i, o);
    F::execute(kind, static_cast<typename F::Plan>(p.get()), i, o);
  };
  size_t longest = g.loops.size();
  for (size_t i = 0; i < g.loops.size(); ++i)
    if (longest == g.loops.size() || g.loops[i].n > g.loops[longest].n) longest = i;
  // Below ~64K elements of work a second thread costs more than it saves.
  if (num_threads() < 2 || longest == g.loops.size() || g.loops[longest].n < 2 || work < (int64_t(1) << 16)) {
    execute(g, 0, 0);
    return;
  }
  const fftw_iodim64 split = g.loops[longest];
  parallel_for(0, split.n, 1, [&](int64_t b, int64_t e) {
    Geometry part = g;
    part.loops[longest].n = e - b;
    execute(part, b * split.is, b * split.os);
  });
}

// FFTW's planner may refuse an input that reads one element twice (an
// expanded dim, stride 0): such an input is made contiguous first.
Tensor readable(const Tensor& x) {
  for (int d = 0; d < x.dim(); ++d)
    if (x.size(d) > 1 && x.stride(d) == 0) return x.contiguous();
  return x;
}

// p[0, n) *= s (nothing for s == 1: the unnormalized transforms).
template <typename T, typename R>
void scale_by(T* p, int64_t n, R s) {
  if (s == R(1)) return;
  parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

template <typename R>
void c2c_typed(const Tensor& x, std::span<const int> dims, bool forward, double scale, const Tensor& out) {
  using C = std::complex<R>;
  const Geometry g = geometry(x.shape(), x.strides(), out.strides(), dims);
  run<R>(forward ? Kind::Forward : Kind::Backward, g, out.numel(), x.data_ptr(), sizeof(C), out.data_ptr(),
         sizeof(C));
  scale_by(static_cast<C*>(out.data_ptr()), out.numel(), R(scale));
}

template <typename R>
void r2c_typed(const Tensor& x, std::span<const int> dims, double scale, const Tensor& out) {
  using C = std::complex<R>;
  const Geometry g = geometry(x.shape(), x.strides(), out.strides(), dims);
  run<R>(Kind::R2C, g, x.numel(), x.data_ptr(), sizeof(R), out.data_ptr(), sizeof(C));
  scale_by(static_cast<C*>(out.data_ptr()), out.numel(), R(scale));
}

// FFTW's c2r overwrites its input and, over several dims, assumes the whole
// array Hermitian; torch's (pocketfft's) reads the half spectrum as the backward
// transform over the other dims, then a one-dim Hermitian transform whose
// first and Nyquist entries count with their real parts only. So: a working
// copy, the c2c over the other dims in place, those imaginary parts zeroed,
// then the one-dim c2r.
template <typename R>
void c2r_typed(const Tensor& x, std::span<const int> dims, double scale, const Tensor& out) {
  using C = std::complex<R>;
  const int last = dims.back();
  Tensor work = empty(x.sizes(), x.dtype(), x.device());
  if (dims.size() > 1)
    c2c_typed<R>(x, dims.first(dims.size() - 1), false, 1.0, work);
  else
    work.copy_(x);
  const int64_t m = x.size(last), n = out.size(last);
  {
    // Lines along `last`: m entries `stride` apart, one per outer x inner index.
    const int64_t stride = work.stride(last), inner = stride, outer = work.numel() / (m * inner);
    C* w = static_cast<C*>(work.data_ptr());
    parallel_for(0, outer, 64, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          C* line = w + o * m * inner + i;
          line[0].imag(0);
          if (n % 2 == 0) line[(m - 1) * stride].imag(0);
        }
    });
  }
  // The one-dim c2r: its logical size is the real n, its strides the arrays'.
  Shape logical = x.sizes();
  logical[size_t(last)] = n;
  const int one[1] = {last};
  const Geometry g = geometry(logical, work.strides(), out.strides(), one);
  run<R>(Kind::C2R, g, out.numel(), work.data_ptr(), sizeof(C), out.data_ptr(), sizeof(R));
  scale_by(static_cast<R*>(out.data_ptr()), out.numel(), R(scale));
}

void c2c_kernel(const Tensor& x_in, std::span<const int> dims, bool forward, double scale,
                const Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor x = readable(x_in);
  if (x.dtype() == DType::Complex128)
    c2c_typed<double>(x, dims, forward, scale, out);
  else
    c2c_typed<float>(x, dims, forward, scale, out);
}

void r2c_kernel(const Tensor& x_in, std::span<const int> dims, double scale, const Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor x = readable(x_in);
  if (x.dtype() == DType::Float64)
    r2c_typed<double>(x, dims, scale, out);
  else
    r2c_typed<float>(x, dims, scale, out);
}

void c2r_kernel(const Tensor& x, std::span<const int> dims, double scale, const Tensor& out) {
  if (out.numel() == 0) return;
  if (x.dtype() == DType::Complex128)
    c2r_typed<double>(x, dims, scale, out);
  else
    c2r_typed<float>(x, dims, scale, out);
}

}  // namespace

void register_fft_kernels() {
  ops::fft_c2c.set_kernel(DeviceKind::CPU, c2c_kernel);
  ops::fft_r2c.set_kernel(DeviceKind::CPU, r2c_kernel);
  ops::fft_c2r.set_kernel(DeviceKind::CPU, c2r_kernel);
}

}  // namespace kiln::cpu
