// grouped_mm front-end (PyTorch's four rank combinations) and the grouped
// linear work loop shared with the MoE FFN.
#include "kiln/grouped_mm.h"

#include <algorithm>
#include <vector>

#include "core/scratch.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "kiln/allocator.h"
#include "kiln/error.h"
#include "kiln/linear.h"
#include "kiln/matmul.h"
#include "kiln/thread_pool.h"
#include "ops/linear_common.h"

namespace kiln {
namespace detail {

// Expert groups of up to this many rows take the matrix-vector kernel, more
// take the packed GEMM. Above linear's crossover (kLinearGemvMaxRows, on
// 4096 x 4096): an expert's few hundred KiB to few MiB of weights repay
// packing less than one big matrix. moe_ffn, 8..16 rows per expert
// (Qwen3-30B-A3B and gpt-oss-20b widths, bf16 and FP8, cold): 14-45% less
// time than with the GEMM from 7 rows on; at 32 rows the GEMM is faster.
constexpr int64_t kGroupedGemvMaxRows = 16;

void grouped_linear(const GroupedLinear& p) {
  if (p.G == 0 || p.N == 0) return;
  const int64_t isz = int64_t(itemsize(p.w_dtype));
  auto args_for = [&](int64_t g) {
    const int64_t s = g == 0 ? 0 : p.ends[g - 1], e = p.ends[g];
    cpu::GemvArgs a;
    a.w = static_cast<const char*>(p.w) + g * p.w_stride * isz;
    a.ldw = p.ldw;
    a.N = p.N;
    a.K = p.K;
    a.x = p.x + s * p.ldx;
    a.ldx = p.ldx;
    a.M = e - s;
    a.y = p.y + s * p.ldy;
    a.ldy = p.ldy;
    a.y_dtype = DType::Float32;
    a.w_no_nan = p.codes == Fp8Codes::NoNan;
    if (p.subnormals) {  // expert g's rows of the list
      a.sub_row_start = p.subnormals->row_start.data() + g * p.N;
      a.sub_col = p.subnormals->col.data();
      a.sub_row = p.subnormals->row.data();
      a.sub_code = p.subnormals->code.data();
    }
    if (p.scale) {
      a.scale_kind = cpu::ScaleKind::Row;
      a.scale = p.scale + g * p.N;
    }
    if (p.bias) a.bias = p.bias + g * p.N;
    return a;
  };
  // Work items (group, chunk of N): chunks of ~256 KiB of weights, small
  // enough that even top-2 routing over one token keeps every thread busy,
  // large enough to repay each item's set-up.
  const int64_t chunk = std::min<int64_t>(
      p.N, std::max<int64_t>(8, ((int64_t(256) << 10) / std::max<int64_t>(1, p.K * isz)) / 8 * 8));
  // Groups of more than kGroupedGemvMaxRows rows run the packed GEMM: their x
  // rows are packed once, at xoff[g] in one buffer, before the items run, and
  // their chunks are at least 192 rows, so each item reads that packed x
  // (from L2 or L3) for enough weight rows.
  const int64_t pchunk = std::min<int64_t>(p.N, std::max<int64_t>(chunk, 192));
  struct Item {
    int32_t g, n0, n1;  // group, its rows [n0, n1) of W
  };
  thread_local std::vector<Item> items;
  thread_local std::vector<int64_t> xoff;
  thread_local std::vector<int32_t> packed;
  items.clear();
  packed.clear();
  xoff.assign(size_t(p.G), -1);
  int64_t xfloats = 0;
  for (int64_t g = 0; g < p.G; ++g) {
    const int64_t rows = p.ends[g] - (g == 0 ? 0 : p.ends[g - 1]);
    if (rows == 0) continue;  // empty groups cost nothing
    const bool pack = rows > kGroupedGemvMaxRows && p.K > 0;
    const int64_t step = pack ? pchunk : chunk;
    for (int64_t c0 = 0; c0 < p.N; c0 += step)
      items.push_back({int32_t(g), int32_t(c0), int32_t(std::min(p.N, c0 + step))});
    if (pack) {
      xoff[size_t(g)] = xfloats;
      // Whole 64-byte lines per group, so every group's packed x stays aligned.
      xfloats += (cpu::gemm_packed_x_floats(p.w_dtype, rows, p.K) + 15) / 16 * 16;
      packed.push_back(int32_t(g));
    }
  }
  if (items.empty()) return;
  // The pool's threads see their own thread_locals: the lambdas below use
  // these pointers to the calling thread's.
  const int64_t* xo = xoff.data();
  const int32_t* pk = packed.data();
  const ScratchBlock xbuf(size_t(xfloats) * sizeof(float));
  float* xp = xbuf.as<float>();
  parallel_for(0, int64_t(packed.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t g = pk[i];
      cpu::gemm_pack_x(p.w_dtype, args_for(g), xp + xo[g]);
    }
  });
  // One contiguous run of items per thread, of equal estimated cost (weight
  // rows x (activation rows + 4), the 4 standing for reading the weights):
  // groups differ in size, so equal item counts would leave a thread idle.
  const int nt = num_threads();
  thread_local std::vector<int64_t> split;
  split.assign(size_t(nt) + 1, int64_t(items.size()));
  split[0] = 0;
  {
    auto cost = [&](const Item& item) {
      const int64_t rows = p.ends[item.g] - (item.g == 0 ? 0 : p.ends[item.g - 1]);
      return double(item.n1 - item.n0) * double(rows + 4);
    };
    double total = 0;
    for (const auto& item : items) total += cost(item);
    double run = 0;
    int t = 1;
    for (size_t i = 0; i < items.size() && t < nt; ++i) {
      run += cost(items[i]);
      while (t < nt && run >= total * t / nt) split[size_t(t++)] = int64_t(i) + 1;
    }
  }
  const auto* it = items.data();
  const int64_t* sp = split.data();
  parallel_for(0, nt, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t i = sp[t0]; i < sp[t1]; ++i) {
      const Item& item = it[i];
      const cpu::GemvArgs a = args_for(item.g);
      if (xo[item.g] >= 0 || p.K == 0)  // K = 0: the bias, or zeros
        cpu::gemm_packed_rows(p.w_dtype, a, xo[item.g] >= 0 ? xp + xo[item.g] : nullptr, item.n0, item.n1);
      else
        cpu::gemv_rows(p.w_dtype, a, item.n0, item.n1);
    }
  });
}

}  // namespace detail

namespace {

// Validates offs against the grouped extent `total` and returns it as int32.
Tensor check_offs(const Tensor& offs, int64_t groups, int64_t total, const char* what) {
  KILN_CHECK(offs.defined(), ValueError,
             "[grouped_mm] offs is required when an operand is 2-D (groups along " << what << ")");
  KILN_CHECK(offs.dtype() == DType::Int32, TypeError,
             "[grouped_mm] offs must be int32, got " << name(offs.dtype()));
  KILN_CHECK(offs.dim() == 1, ValueError, "[grouped_mm] offs must be 1-D, got shape " << offs.shape_str());
  if (groups >= 0)
    KILN_CHECK(offs.size(0) == groups, ValueError,
               "[grouped_mm] offs has " << offs.size(0) << " entries but the 3-D operand has " << groups
                                        << " groups");
  const Tensor o = offs.contiguous();
  const int32_t* p = o.data<int32_t>();
  int64_t prev = 0;
  for (int64_t g = 0; g < o.numel(); ++g) {
    KILN_CHECK(p[g] >= prev, ValueError,
               "[grouped_mm] offs must be non-decreasing and non-negative; offs[" << g << "] = " << p[g]
                                                                                  << " after " << prev);
    KILN_CHECK(p[g] <= total, ValueError,
               "[grouped_mm] offs[" << g << "] = " << p[g] << " exceeds the " << what << " extent " << total);
    prev = p[g];
  }
  return o;
}

}  // namespace

Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs, const Tensor& bias,
                  std::optional<DType> out_dtype, const Tensor& b_scale) {
  KILN_CHECK(a.defined() && b.defined(), ValueError, "[grouped_mm] mat_a and mat_b must be defined");
  KILN_CHECK(a.dim() == 2 || a.dim() == 3, ValueError,
             "[grouped_mm] mat_a must be 2-D or 3-D, got shape " << a.shape_str());
  KILN_CHECK(b.dim() == 2 || b.dim() == 3, ValueError,
             "[grouped_mm] mat_b must be 2-D or 3-D, got shape " << b.shape_str());
  KILN_CHECK(detail::is_activation_dtype(a.dtype()), TypeError,
             "[grouped_mm] mat_a must be float32, bfloat16 or float16, got " << name(a.dtype()));
  const bool fp8_b = is_fp8(b.dtype());
  if (fp8_b) {
    KILN_CHECK(a.dim() == 2 && b.dim() == 3, ValueError,
               "[grouped_mm] FP8 mat_b is supported in the 2-D x 3-D form only, got "
                   << a.shape_str() << " x " << b.shape_str());
  } else {
    KILN_CHECK(a.dtype() == b.dtype(), TypeError,
               "[grouped_mm] mat_a and mat_b must have the same dtype, got " << name(a.dtype()) << " and "
                                                                             << name(b.dtype()));
    KILN_CHECK(!b_scale.defined(), ValueError, "[grouped_mm] b_scale is for FP8 mat_b only");
  }
  const DType od = out_dtype.value_or(a.dtype());
  KILN_CHECK(od == a.dtype() || od == DType::Float32, TypeError,
             "[grouped_mm] out_dtype must be " << (a.dtype() == DType::Float32 ? std::string("float32")
                                                                                : std::string(name(a.dtype())) + " or float32")
                                                   << ", got " << name(od));
  KILN_CHECK(a.size(-1) == b.size(-2), ValueError,
             "[grouped_mm] contraction dims of mat_a " << a.shape_str() << " and mat_b " << b.shape_str()
                                                       << " must match");
  KILN_CHECK(!bias.defined() || (a.dim() == 2 && b.dim() == 3), ValueError,
             "[grouped_mm] bias is supported in the 2-D x 3-D form only");

  if (a.dim() == 3 && b.dim() == 3) {
    KILN_CHECK(!offs.defined(), ValueError, "[grouped_mm] offs must be None when both operands are 3-D");
    KILN_CHECK(a.size(0) == b.size(0), ValueError,
               "[grouped_mm] group counts differ: " << a.shape_str() << " and " << b.shape_str());
    return matmul(a.to(DType::Float32), b.to(DType::Float32)).to(od);
  }

  if (a.dim() == 2 && b.dim() == 3) {
    // out[s:e] = a[s:e] @ b[g]; b[g] = W[g]^T with W [G, N, K] in the linear layout.
    const int64_t T = a.size(0), K = a.size(1), G = b.size(0), N = b.size(2);
    const Tensor o = check_offs(offs, G, T, "rows of mat_a");
    Tensor bw = b.transpose(1, 2);  // [G, N, K]
    if (bw.stride(2) != 1 || (N > 1 && bw.stride(1) < K) || (G > 1 && bw.stride(0) < N * K))
      bw = bw.contiguous();
    Tensor sc, bi;
    if (fp8_b && b_scale.defined()) {
      KILN_CHECK(
          b_scale.numel() == G * N && ((b_scale.dim() == 2 && b_scale.size(0) == G) ||
                                       (b_scale.dim() == 3 && b_scale.size(2) == 1 && b_scale.size(0) == G)),
          ValueError,
          "[grouped_mm] b_scale must be [" << G << ", " << N << "] or [" << G << ", " << N << ", 1], got "
                                           << b_scale.shape_str());
      KILN_CHECK(is_floating(b_scale.dtype()) && !is_fp8(b_scale.dtype()), TypeError,
                 "[grouped_mm] b_scale must be float32, bfloat16 or float16, got " << name(b_scale.dtype()));
      sc = detail::f32_contiguous(b_scale);
    }
    if (bias.defined()) {
      KILN_CHECK(bias.dim() == 2 && bias.size(0) == G && bias.size(1) == N, ValueError,
                 "[grouped_mm] bias must be [" << G << ", " << N << "], got " << bias.shape_str());
      KILN_CHECK(is_floating(bias.dtype()) && !is_fp8(bias.dtype()), TypeError,
                 "[grouped_mm] bias must be float32, bfloat16 or float16, got " << name(bias.dtype()));
      bi = detail::f32_contiguous(bias);
    }
    const Tensor xf = detail::f32_contiguous(a);
    Tensor y = zeros({T, N}, DType::Float32);
    detail::GroupedLinear p;
    p.x = xf.data<float>();
    p.ldx = K;
    p.w = bw.data_ptr();
    p.w_dtype = bw.dtype();
    p.ldw = N > 1 ? bw.stride(1) : K;
    p.w_stride = G > 1 ? bw.stride(0) : N * K;
    p.G = G;
    p.N = N;
    p.K = K;
    p.scale = sc.defined() ? sc.data<float>() : nullptr;
    p.bias = bi.defined() ? bi.data<float>() : nullptr;
    p.ends = o.data<int32_t>();
    p.y = y.data<float>();
    p.ldy = N;
    detail::grouped_linear(p);
    return y.to(od);
  }

  const Tensor af = detail::f32_contiguous(a), bf = detail::f32_contiguous(b);
  if (a.dim() == 3) {
    // 3-D x 2-D: out[:, s:e] = a[g] @ b[:, s:e]; a [G, M, K], b [K, T].
    const int64_t G = a.size(0), M = a.size(1), K = a.size(2), T = b.size(1);
    const Tensor o = check_offs(offs, G, T, "columns of mat_b");
    const int32_t* ends = o.data<int32_t>();
    Tensor y = zeros({M, T}, DType::Float32);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t s = g == 0 ? 0 : ends[g - 1], e = ends[g];
      if (e > s && K > 0)
        cpu::sgemm(false, M, e - s, K, 1.0f, af.data<float>() + g * M * K, K, bf.data<float>() + s, T, 0.0f,
                   y.data<float>() + s, T);
    }
    return y.to(od);
  }
  // 2-D x 2-D: out[g] = a[:, s:e] @ b[s:e]; a [M, T], b [T, N], groups along T.
  const int64_t M = a.size(0), T = a.size(1), N = b.size(1);
  const int64_t G = offs.defined() && offs.dim() == 1 ? offs.size(0) : -1;
  const Tensor o = check_offs(offs, G, T, "contraction dim");
  const int32_t* ends = o.data<int32_t>();
  Tensor y = zeros({G, M, N}, DType::Float32);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t s = g == 0 ? 0 : ends[g - 1], e = ends[g];
    if (e > s)
      cpu::sgemm(false, M, N, e - s, 1.0f, af.data<float>() + s, T, bf.data<float>() + s * N, N, 0.0f,
                 y.data<float>() + g * M * N, N);
  }
  return y.to(od);
}

}  // namespace kiln
