// Op table entries of the MoE ops (ops/registry/matmul.h): routing, the
// permutation by expert, the weighted un-permute and the SwiGLU expert FFN,
// against float64 references written from their definitions (kiln/moe.h).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/bf16_gemm.h"
#include "kiln/moe.h"
#include "op_table/matmul_ref.h"

namespace op_table {
namespace {

using namespace kiln;

// Per token of logits [T, E]: the k most probable experts' (probabilities,
// ids), descending, renormalized when norm.
void route_ref(const std::vector<double>& logits, int64_t T, int64_t E, int64_t k, bool norm,
               std::vector<double>& w, std::vector<int64_t>& ids) {
  w.assign(size_t(T * k), 0.0);
  ids.assign(size_t(T * k), 0);
  for (int64_t t = 0; t < T; ++t) {
    const double* l = logits.data() + t * E;
    const double mx = *std::max_element(l, l + E);
    std::vector<double> p(static_cast<size_t>(E));
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += p[size_t(e)] = std::exp(l[e] - mx);
    std::vector<int64_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
    double ksum = 0;
    for (int64_t j = 0; j < k; ++j) ksum += p[size_t(order[size_t(j)])] / sum;
    for (int64_t j = 0; j < k; ++j) {
      const double pj = p[size_t(order[size_t(j)])] / sum;
      ids[size_t(t * k + j)] = order[size_t(j)];
      w[size_t(t * k + j)] = norm ? pj / ksum : pj;
    }
  }
}

constexpr int64_t kExperts = 6, kTopK = 2;

Entry route_entry(bool norm) {
  Entry e;
  e.op = "moe_route";
  e.dtypes = {DType::Float32, DType::Float64, DType::BFloat16};
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, kExperts}}};
      case ShapeClass::Odd:
        return {{{5, kExperts}}};
      case ShapeClass::NonContiguous:
        return {{{300, kExperts}, InputSpec::Transposed}};  // tokens in parallel
      default:
        return {};
    }
  };
  e.call = [norm](const std::vector<Tensor>& t) {
    const auto [w, ids] = moe_route(t[0], kTopK, norm);
    return join({w, ids}, DType::Float32);
  };
  e.oracle = [norm](const Inputs& in, const Tensor&) {
    std::vector<double> w;
    std::vector<int64_t> ids;
    route_ref(in.values[0], in.shapes[0][0], kExperts, kTopK, norm, w, ids);
    w.insert(w.end(), ids.begin(), ids.end());
    return w;
  };
  e.ulps = 8;
  return e;
}

// ids drawn as integers in [0, kExperts).
Entry permute_entry() {
  Entry e;
  e.op = "moe_permute";
  e.dtypes = {DType::Int32};
  e.lo = -0.49;
  e.hi = kExperts - 0.51;
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, kTopK}}};
      case ShapeClass::Odd:
        return {{{7, kTopK}}};
      case ShapeClass::NonContiguous:
        return {{{9, kTopK}, InputSpec::Transposed}};
      default:
        return {};
    }
  };
  e.call = [](const std::vector<Tensor>& t) {
    const auto [perm, offs] = moe_permute(t[0], kExperts);
    return join({perm, offs}, DType::Int64);
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> perm, offs;
    for (int64_t x = 0; x < kExperts; ++x) {
      for (size_t r = 0; r < in.values[0].size(); ++r)
        if (in.values[0][r] == double(x)) perm.push_back(double(r));
      offs.push_back(double(perm.size()));
    }
    perm.insert(perm.end(), offs.begin(), offs.end());
    return perm;
  };
  e.ulps = 0;
  return e;
}

// perm: slot r*7 mod R (R = T * k coprime with 7), a fixed permutation.
Tensor perm_of(int64_t R, Device device) {
  std::vector<int32_t> p(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) p[size_t(r)] = int32_t((r * 7) % R);
  return from_buffer_copy(p.data(), {R}, DType::Int32).to(device);
}

// float64 y_perm is summed in float32 too (kiln/moe.h): its entry's tolerance
// is float32's.
Entry unpermute_entry(bool f64) {
  Entry e;
  e.op = "moe_unpermute";
  e.dtypes = f64 ? std::vector<DType>{DType::Float64}
                 : std::vector<DType>{DType::Float32, DType::BFloat16, DType::Float16};
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 37}}, {{0, kTopK}}};
      case ShapeClass::Odd:
        return {{{5 * kTopK, 37}}, {{5, kTopK}}};
      case ShapeClass::NonContiguous:
        return {{{5 * kTopK, 37}, InputSpec::Transposed}, {{5, kTopK}, InputSpec::Strided}};
      default:
        return {};
    }
  };
  e.call = [](const std::vector<Tensor>& t) { return moe_unpermute(t[0], perm_of(t[0].size(0), t[0].device()), t[1]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const int64_t R = in.shapes[0][0], H = in.shapes[0][1], T = in.shapes[1][0], k = in.shapes[1][1];
    std::vector<double> out(size_t(T * H), 0.0);
    for (int64_t r = 0; r < R; ++r) {
      const int64_t slot = (r * 7) % R;  // row r of y_perm holds slot perm[r]
      for (int64_t h = 0; h < H; ++h)
        out[size_t((slot / k) * H + h)] += in.values[1][size_t(slot)] * in.values[0][size_t(r * H + h)];
    }
    return out;
  };
  e.ulps = f64 ? std::ldexp(8.0, 29) : 8;
  return e;
}

// x [T, H], router [E, H], gate_up [E, 2I, H], down [E, H, I]; FP8 experts
// (e4m3, per-row scales gate_up_scale [E, 2I], down_scale [E, H]) when fp8.
Entry ffn_entry(bool fp8) {
  constexpr int64_t H = 37, I = 11, E = kExperts;
  Entry e;
  e.op = "moe_ffn";
  e.dtypes = {DType::Float32};
  e.lo = -1;
  e.hi = 1;
  e.shapes = [fp8](ShapeClass c) -> std::vector<InputSpec> {
    int64_t T = 0;
    InputSpec::Layout lay = InputSpec::Contiguous;
    if (c == ShapeClass::Odd) T = 5;
    if (c == ShapeClass::NonContiguous) T = 40, lay = InputSpec::Transposed;  // groups of > 16 rows: the GEMM
    if (c != ShapeClass::Empty && T == 0) return {};
    std::vector<InputSpec> s = {{{T, H}, lay}, {{E, H}}, {{E, 2 * I, H}, lay}, {{E, H, I}}};
    if (fp8) s.insert(s.end(), {{{E, 2 * I}}, {{E, H}}});
    return s;
  };
  e.call = [fp8](const std::vector<Tensor>& t) {
    if (!fp8) return moe_ffn(t[0], t[1], t[2], t[3], kTopK);
    // The oracle takes float32 products: the AVX512-BF16 GEMM, which rounds
    // the activations of expert groups past 16 rows to bf16, is tested with
    // its own reference in grouped_mm_test.cc.
    const bool allowed = bf16_gemm_allowed();
    allow_bf16_gemm(false);
    struct Restore {
      bool on;
      ~Restore() { allow_bf16_gemm(on); }
    } restore{allowed};
    return moe_ffn(t[0], t[1], t[2].to(DType::Float8_e4m3fn), t[3].to(DType::Float8_e4m3fn), kTopK, true,
                   t[4], t[5]);
  };
  e.oracle = [fp8](const Inputs& in, const Tensor&) {
    const auto& x = in.values[0];
    const int64_t T = in.shapes[0][0];
    std::vector<double> gu = in.values[2], dn = in.values[3];
    if (fp8) {
      for (size_t i = 0; i < gu.size(); ++i) gu[i] = as_e4m3(gu[i]) * in.values[4][i / H];
      for (size_t i = 0; i < dn.size(); ++i) dn[i] = as_e4m3(dn[i]) * in.values[5][i / I];
    }
    const std::vector<double> logits = ref_linear(x, in.values[1], T, E, H);
    std::vector<double> w;
    std::vector<int64_t> ids;
    route_ref(logits, T, E, kTopK, true, w, ids);
    std::vector<double> y(size_t(T * H), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < kTopK; ++j) {
        const int64_t ex = ids[size_t(t * kTopK + j)];
        const std::vector<double> xt(x.begin() + t * H, x.begin() + (t + 1) * H);
        const std::vector<double> h(gu.begin() + ex * 2 * I * H, gu.begin() + (ex + 1) * 2 * I * H);
        const std::vector<double> hv = ref_linear(xt, h, 1, 2 * I, H);  // [2I]: gate, then up
        std::vector<double> act(static_cast<size_t>(I));
        for (int64_t i = 0; i < I; ++i) {
          const double g = hv[size_t(i)];
          act[size_t(i)] = g / (1 + std::exp(-g)) * hv[size_t(I + i)];
        }
        const std::vector<double> d(dn.begin() + ex * H * I, dn.begin() + (ex + 1) * H * I);
        const std::vector<double> yt = ref_linear(act, d, 1, H, I);
        for (int64_t c = 0; c < H; ++c) y[size_t(t * H + c)] += w[size_t(t * kTopK + j)] * yt[size_t(c)];
      }
    return y;
  };
  e.ulps = 64;
  e.floor = 1;
  return e;
}

KILN_OP_TABLE({route_entry(true), route_entry(false), permute_entry(), unpermute_entry(false),
               unpermute_entry(true), ffn_entry(false), ffn_entry(true)});

}  // namespace
}  // namespace op_table
