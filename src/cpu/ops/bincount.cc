// CPU kernel of bincount (ops/registry/sort.h): per-thread private histograms
// over contiguous chunks of the input, summed bin-wise at the end, so a skewed
// input (most values in one bin) costs no atomics and no false sharing.
#include <algorithm>
#include <vector>

#include "cpu/ops/reduce_register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

void bincount(const Tensor& x, const Tensor& weights, const Tensor& out) {
  const int64_t n = x.numel();
  const int64_t nbins = out.size(0);
  if (n == 0 || nbins == 0) return;
  const int64_t* xv = x.data<int64_t>();
  const double* wv = weights.defined() ? weights.data<double>() : nullptr;
  // Enough chunks to use the threads, few enough that zeroing and summing the
  // private histograms stays small next to the counting.
  const int64_t chunks =
      std::clamp<int64_t>(n / std::max<int64_t>(4 * nbins, 1 << 15), 1, int64_t(num_threads()));
  // Small bin counts get kLanes interleaved copies per chunk: consecutive
  // elements land in different copies, so a run of equal values does not
  // serialize on one counter's load-add-store.
  constexpr int64_t kLanes = 4;
  const int64_t lanes = nbins <= 4096 ? kLanes : 1;
  auto count = [&]<typename Acc>(Acc* hist, int64_t b, int64_t e) {
    int64_t i = b;
    if (lanes == kLanes) {
      for (; i + kLanes <= e; i += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) hist[l * nbins + xv[i + l]] += wv ? Acc(wv[i + l]) : Acc(1);
      }
    }
    for (; i < e; ++i) hist[xv[i]] += wv ? Acc(wv[i]) : Acc(1);
  };
  auto run = [&]<typename Acc>() {
    const int64_t width = lanes * nbins;
    std::vector<Acc> hists(size_t(chunks * width), Acc(0));
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c)
        count.template operator()<Acc>(hists.data() + c * width, n * c / chunks, n * (c + 1) / chunks);
    });
    std::vector<Acc> hist(size_t(nbins), Acc(0));
    parallel_for(0, nbins, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t c = 0; c < chunks * lanes; ++c)
        for (int64_t i = b; i < e; ++i) hist[size_t(i)] += hists[size_t(c * nbins + i)];
    });
    return hist;
  };
  if (!wv) {
    const std::vector<int64_t> h = run.template operator()<int64_t>();
    std::copy(h.begin(), h.end(), out.data<int64_t>());
  } else {
    const std::vector<double> h = run.template operator()<double>();
    if (out.dtype() == DType::Float32) {
      float* o = out.data<float>();
      for (int64_t i = 0; i < nbins; ++i) o[i] = float(h[size_t(i)]);
    } else {
      std::copy(h.begin(), h.end(), out.data<double>());
    }
  }
}

}  // namespace

void register_bincount_kernel() { ops::bincount.set_kernel(DeviceKind::CPU, bincount); }

}  // namespace kiln::cpu
