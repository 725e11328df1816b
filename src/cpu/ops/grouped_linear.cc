// The grouped linear work loop shared by grouped_mm and the MoE FFN (see
// grouped_linear.h): work items of (group, N-chunk), each a matrix-vector
// product for small groups or the packed GEMM for large ones.
#include "cpu/ops/grouped_linear.h"

#include <algorithm>
#include <vector>

#include "core/scratch.h"
#include "cpu/amx.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "kiln/allocator.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

GroupedLinear grouped_linear_args(const float* x, const Tensor& w, const Tensor& scale, const Tensor& bias,
                                  const int32_t* ends, float* y, Fp8Codes codes,
                                  const Fp8Subnormals* subnormals) {
  const int64_t G = w.size(0), N = w.size(1), K = w.size(2);
  GroupedLinear p;
  p.x = x;
  p.ldx = K;
  p.w = w.data_ptr();
  p.w_dtype = w.dtype();
  p.ldw = N > 1 ? w.stride(1) : K;
  p.w_stride = G > 1 ? w.stride(0) : N * K;
  p.G = G;
  p.N = N;
  p.K = K;
  p.scale = scale.defined() ? scale.data<float>() : nullptr;
  p.bias = bias.defined() ? bias.data<float>() : nullptr;
  p.ends = ends;
  p.y = y;
  p.ldy = N;
  p.codes = codes;
  p.subnormals = subnormals;
  return p;
}

// Expert groups of up to this many rows take the matrix-vector kernel, more
// take the packed GEMM. Above linear's crossover (kLinearGemvMaxRows, on
// 4096 x 4096): an expert's few hundred KiB to few MiB of weights repay
// packing less than one big matrix. moe_ffn, 8..16 rows per expert
// (Qwen3-30B-A3B and gpt-oss-20b widths, bf16 and FP8, cold): 14-45% less
// time than with the GEMM from 7 rows on; at 32 rows the GEMM is faster.
constexpr int64_t kGroupedGemvMaxRows = 16;
// bf16 experts on the AVX512-BF16 GEMM cross over sooner: gpt-oss-20b widths,
// 64 tokens (8 rows per expert on average), moe_ffn 99-100 ms against 117-120
// with 16 (Zen 5, two alternating rounds); FP8 experts ran slower with 8
// (their GEMM widens each code; the matrix-vector kernel reads one byte).
constexpr int64_t kGroupedGemvMaxRowsBf16Gemm = 8;
// On AMX tiles sooner still, bf16 and FP8 alike: gpt-oss-20b widths, 64
// tokens, moe_ffn 65 ms against 120-126 with 8 (bf16, a 2-core AMX Xeon, two
// alternating rounds; 16 and 512 tokens alike); FP8, since its codes widen
// through byte tables, 60 ms against 138 with 16 and 89 with 8 (Qwen3-30B-A3B
// widths: 41 against 63 at 64 tokens, 80 against 106 at 512).
constexpr int64_t kGroupedGemvMaxRowsAmx = 3;

int64_t grouped_gemv_max_rows(DType w_dtype, bool row_scaled) {
  const bool bf16_unit = bf16_gemm_covers(w_dtype, row_scaled ? ScaleKind::Row : ScaleKind::None);
  if (bf16_unit && amx_tiles_active()) return kGroupedGemvMaxRowsAmx;
  if (bf16_unit && w_dtype == DType::BFloat16) return kGroupedGemvMaxRowsBf16Gemm;
  return kGroupedGemvMaxRows;
}

void grouped_linear(const GroupedLinear& p) {
  if (p.G == 0 || p.N == 0) return;
  const int64_t isz = int64_t(itemsize(p.w_dtype));
  auto args_for = [&](int64_t g) {
    const int64_t s = g == 0 ? 0 : p.ends[g - 1], e = p.ends[g];
    GemvArgs a;
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
      a.scale_kind = ScaleKind::Row;
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
  // Groups of more than gemv_max_rows rows run the packed GEMM: their x
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
  const int64_t gemv_max_rows = grouped_gemv_max_rows(p.w_dtype, p.scale != nullptr);
  for (int64_t g = 0; g < p.G; ++g) {
    const int64_t rows = p.ends[g] - (g == 0 ? 0 : p.ends[g - 1]);
    if (rows == 0) continue;  // empty groups cost nothing
    const bool pack = rows > gemv_max_rows && p.K > 0;
    const int64_t step = pack ? pchunk : chunk;
    for (int64_t c0 = 0; c0 < p.N; c0 += step)
      items.push_back({int32_t(g), int32_t(c0), int32_t(std::min(p.N, c0 + step))});
    if (pack) {
      xoff[size_t(g)] = xfloats;
      // Whole 64-byte lines per group, so every group's packed x stays aligned.
      xfloats += (gemm_packed_x_floats(p.w_dtype, rows, p.K) + 15) / 16 * 16;
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
      gemm_pack_x(p.w_dtype, args_for(g), xp + xo[g]);
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
      const GemvArgs a = args_for(item.g);
      if (xo[item.g] >= 0 || p.K == 0)  // K = 0: the bias, or zeros
        gemm_packed_rows(p.w_dtype, a, xo[item.g] >= 0 ? xp + xo[item.g] : nullptr, item.n0, item.n1);
      else
        gemv_rows(p.w_dtype, a, item.n0, item.n1);
    }
  });
}

}  // namespace kiln::cpu
