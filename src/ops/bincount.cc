// bincount: per-thread private histograms over contiguous chunks of the input,
// summed bin-wise at the end, so a skewed input (most values in one bin) costs
// no atomics and no false sharing.
#include <algorithm>
#include <vector>

#include "kiln/sort.h"
#include "kiln/thread_pool.h"

namespace kiln {

Tensor bincount(const Tensor& x_in, const Tensor& weights_in, int64_t minlength) {
  if (x_in.dim() != 1 || !is_integral(x_in.dtype(), false)) {
    if (x_in.dim() != 1)
      throw ValueError("[bincount] only supports 1-d non-negative integral inputs, got shape " +
                       x_in.shape_str());
    throw TypeError(std::string("[bincount] only supports 1-d non-negative integral inputs, got dtype ") +
                    name(x_in.dtype()));
  }
  if (minlength < 0)
    throw ValueError("[bincount] minlength should be >= 0, got " + std::to_string(minlength));
  const bool weighted = weights_in.defined();
  if (weighted) {
    if (weights_in.dim() != 1 || weights_in.size(0) != x_in.size(0))
      throw ValueError("[bincount] weights of shape " + weights_in.shape_str() +
                       " should be 1-d and have the same length as input " + x_in.shape_str());
    if (is_complex(weights_in.dtype()))
      throw TypeError(std::string("[bincount] complex weights (") + name(weights_in.dtype()) +
                      ") are not supported");
  }
  // torch: float32 weights give float32 bins, any other weights float64.
  const DType out_dtype = !weighted                              ? DType::Int64
                          : weights_in.dtype() == DType::Float32 ? DType::Float32
                                                                 : DType::Float64;
  const Tensor x = x_in.to(DType::Int64).contiguous();
  const int64_t n = x.numel();
  const int64_t* xv = x.data<int64_t>();
  // Validate (and find the bin count) before allocating.
  const int64_t nchunk_mm = std::clamp<int64_t>(n / (1 << 16), 1, int64_t(num_threads()));
  std::vector<int64_t> mins(size_t(nchunk_mm), 0), maxs(size_t(nchunk_mm), -1);
  parallel_for(0, nchunk_mm, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t lo = 0, hi = -1;
      for (int64_t i = n * c / nchunk_mm, e = n * (c + 1) / nchunk_mm; i < e; ++i) {
        lo = std::min(lo, xv[i]);
        hi = std::max(hi, xv[i]);
      }
      mins[size_t(c)] = lo;
      maxs[size_t(c)] = hi;
    }
  });
  const int64_t minv = *std::min_element(mins.begin(), mins.end());
  const int64_t maxv = *std::max_element(maxs.begin(), maxs.end());
  if (minv < 0 || (x_in.dtype() == DType::UInt64 && n > 0 && maxv < 0))
    throw ValueError("[bincount] only supports 1-d non-negative integral inputs, found " +
                     std::to_string(minv < 0 ? minv : maxv));
  if (maxv >= (int64_t(1) << 40))
    throw ValueError("[bincount] largest value " + std::to_string(maxv) + " would need too many bins");
  const int64_t nbins = std::max(maxv + 1, minlength);
  Tensor out = zeros({nbins}, out_dtype);
  if (n == 0 || nbins == 0) return out;
  const Tensor w = weighted ? weights_in.to(DType::Float64).contiguous() : Tensor();
  const double* wv = weighted ? w.data<double>() : nullptr;
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
  if (!weighted) {
    const std::vector<int64_t> h = run.template operator()<int64_t>();
    std::copy(h.begin(), h.end(), out.data<int64_t>());
  } else {
    const std::vector<double> h = run.template operator()<double>();
    if (out_dtype == DType::Float32) {
      float* o = out.data<float>();
      for (int64_t i = 0; i < nbins; ++i) o[i] = float(h[size_t(i)]);
    } else {
      std::copy(h.begin(), h.end(), out.data<double>());
    }
  }
  return out;
}

}  // namespace kiln
