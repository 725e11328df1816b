// The hot-function cases of `kiln bench ops` (see bench_ops_hot.h): one table
// row per case, so a new op is one line here.
#include "bench_ops_hot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/binary.h"
#include "kiln/interpolate.h"
#include "kiln/pool.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/shape.h"
#include "kiln/sort.h"
#include "kiln/special.h"
#include "kiln/tensor.h"
#include "kiln/unary.h"
#include "kiln/unary_extra.h"

namespace kiln::cli {
namespace {

using bench::json;
using In = std::vector<Tensor>;  // one copy of a case's inputs

constexpr double kF32 = 4.0;

// One input tensor. The torch peer builds the same shape from the same fill
// (FILL in bench_torch_peer.cc; keep the two in step):
//   randn; near1: 1 + randn / 100 (a running product of 4096 stays normal:
//   plain randn would sink into denormals and time the FPU's slow path);
//   bool: randn > 0; sorted: randn sorted along the last dim (searchsorted's
//   boundaries); nan: randn with 1 in 8 NaN (the nan-reductions); uniform:
//   rand in [0, 1); grid: uniform in [-1.1, 1.1) (grid_sample points, a few
//   outside the input).
struct HotInput {
  HotInput(Shape s, std::string f = "randn") : shape(std::move(s)), fill(std::move(f)) {}
  Shape shape;
  std::string fill;
};

// One row of the table: all that both sides need for one case.
struct HotCase {
  std::string name;  // the table row; what --filter matches and the peer's result merges by
  std::vector<HotInput> inputs;
  double bytes;                         // what one call must read + write
  std::function<void(const In&)> kiln;  // one call on one copy of the inputs (result dropped)
  std::string torch;                    // the peer: a Python expression over x (the inputs list)
  std::string bytes_note;
  bool compute = false;  // compute-bound: no roof fraction, extra.bound = "compute"
};

Tensor make_input(const HotInput& in) {
  Tensor r = kiln::randn(in.shape);
  if (in.fill == "randn") return r;
  if (in.fill == "near1") return kiln::add(kiln::mul(r, Scalar(0.01)), Scalar(1.0));
  if (in.fill == "bool") return kiln::gt(r, Scalar(0.0));
  if (in.fill == "sorted") return kiln::sort(r, -1).values;
  if (in.fill == "uniform") return kiln::rand(in.shape);
  if (in.fill == "grid") return kiln::sub(kiln::mul(kiln::rand(in.shape), Scalar(2.2)), Scalar(1.1));
  if (in.fill == "nan")
    return kiln::where(kiln::lt(kiln::rand(in.shape), Scalar(0.125)),
                       Scalar(std::numeric_limits<double>::quiet_NaN()), r);
  throw std::invalid_argument("[bench ops] unknown input fill '" + in.fill + "'");
}

// dims / shifts / repeats as the span arguments of flip, roll and repeat.
constexpr int kLast[] = {-1}, kFirst[] = {0};
constexpr int64_t kShift[] = {1000}, kRep4[] = {4}, kRep22[] = {2, 2};

// The cases at n elements. Memory-bound ones move ~n float32 elements
// (rows of 4096); tril/triu take a square of up to 4096^2; sorting and topk
// (<= 4M elements), searchsorted, logcumsumexp and the special functions
// (<= 16M) are compute-bound, so they stay at sizes that time in about a
// second or less on two cores.
std::vector<HotCase> hot_cases(int64_t n) {
  const int64_t cols = 4096, rows = std::max<int64_t>(1, n / cols);
  const double N = double(rows * cols);
  const Shape mat = {rows, cols};                                 // [rows, 4096]
  const Shape quarter = {rows, cols / 4};                         // [rows, 1024]: cat/stack pieces
  const Shape half = {std::max<int64_t>(1, rows / 2), cols / 2};  // repeat (2, 2) -> ~mat
  const Shape vec4 = {rows * cols / 4};                           // repeat 4 -> [N]
  const int64_t side = std::min<int64_t>(4096, int64_t(std::sqrt(double(n))));
  const Shape square = {side, side};  // tril / triu
  const double tri = kF32 * (double(side) * double(side + 1) / 2 + double(side) * double(side));
  const int64_t m = std::min<int64_t>(n, int64_t(1) << 22);          // sort sizes
  const Shape sort_rows = {std::max<int64_t>(1, m / cols), cols};    // [m/4096, 4096]
  const Shape sort_vec = {m};                                        // [m]
  const Shape topk_rows = {std::max<int64_t>(1, m / 32768), 32768};  // vocab-sized rows
  const int64_t u = std::min<int64_t>(n, int64_t(1) << 24);          // special functions
  const Shape uvec = {u};
  const Shape uscan = {std::max<int64_t>(1, u / cols), cols};  // [u/4096, 4096]
  const double mS = double(sort_rows[0] * cols), mT = double(topk_rows[0] * 32768), U = double(u);
  const double uS = double(uscan[0] * cols);
  const int64_t side_img = 256, chans = 32, batch = std::max<int64_t>(1, n / (chans * side_img * side_img));
  const Shape img = {batch, chans, side_img, side_img};  // [B, 32, 256, 256]: ~n elements
  const Shape grid = {batch, side_img, side_img, 2};     // one point per pixel
  const double I = double(batch * chans * side_img * side_img), G = double(batch * side_img * side_img * 2);
  const std::vector<int64_t> pooled = {side_img / 2, side_img / 2};
  const char* rw = "1 read + 1 write";
  // One row per case, a table to read across.
  // clang-format off
  return {
      // ---- joining and splitting ----
      {"cat 4 dim 0", {quarter, quarter, quarter, quarter}, 2 * kF32 * N, [](const In& x) { return kiln::cat(x, 0); }, "torch.cat(x, 0)", rw},
      {"cat 4 dim -1", {quarter, quarter, quarter, quarter}, 2 * kF32 * N, [](const In& x) { return kiln::cat(x, -1); }, "torch.cat(x, -1)", rw},
      {"stack 4 dim 0", {quarter, quarter, quarter, quarter}, 2 * kF32 * N, [](const In& x) { return kiln::stack(x, 0); }, "torch.stack(x, 0)", rw},
      // split alone is a view on both sides (free): time what a user pays
      // for strided pieces, split along the last dim + .contiguous() of each.
      {"split 4 dim -1 +contiguous", {mat}, 2 * kF32 * N, [](const In& x) { for (const Tensor& p : kiln::split(x[0], 1024, -1)) Tensor y = p.contiguous(); }, "[t.contiguous() for t in torch.split(x[0], 1024, -1)]", "a view: + .contiguous() of each piece, 1 read + 1 write"},
      // ---- selection and rearrangement ----
      {"where", {{mat, "bool"}, mat, mat}, 13 * N, [](const In& x) { return kiln::where(x[0], x[1], x[2]); }, "torch.where(x[0], x[1], x[2])", "bool cond + 2 f32 reads + 1 write"},
      {"repeat 1-d x4", {vec4}, kF32 * 1.25 * N, [](const In& x) { return kiln::repeat(x[0], kRep4); }, "x[0].repeat(4)", "1 read of N/4 + 1 write of N"},
      {"repeat 2-d (2,2)", {half}, kF32 * 5 * double(half[0] * half[1]), [](const In& x) { return kiln::repeat(x[0], kRep22); }, "x[0].repeat(2, 2)", "1 read of N/4 + 1 write of N"},
      {"flip dim -1", {mat}, 2 * kF32 * N, [](const In& x) { return kiln::flip(x[0], kLast); }, "torch.flip(x[0], [-1])", rw},
      {"flip dim 0", {mat}, 2 * kF32 * N, [](const In& x) { return kiln::flip(x[0], kFirst); }, "torch.flip(x[0], [0])", rw},
      {"roll dim -1", {mat}, 2 * kF32 * N, [](const In& x) { return kiln::roll(x[0], kShift, kLast); }, "torch.roll(x[0], 1000, -1)", rw},
      {"tril", {square}, tri, [](const In& x) { return kiln::tril(x[0]); }, "torch.tril(x[0])", "read of the kept triangle + 1 write"},
      {"triu", {square}, tri, [](const In& x) { return kiln::triu(x[0]); }, "torch.triu(x[0])", "read of the kept triangle + 1 write"},
      // ---- scans ----
      {"cumsum dim -1", {mat}, 2 * kF32 * N, [](const In& x) { return kiln::cumsum(x[0], -1); }, "torch.cumsum(x[0], -1)", rw},
      {"cumsum dim 0", {mat}, 2 * kF32 * N, [](const In& x) { return kiln::cumsum(x[0], 0); }, "torch.cumsum(x[0], 0)", rw},
      {"cumprod dim -1", {{mat, "near1"}}, 2 * kF32 * N, [](const In& x) { return kiln::cumprod(x[0], -1); }, "torch.cumprod(x[0], -1)", rw},
      {"cummax dim -1", {mat}, 16 * N, [](const In& x) { return kiln::cummax(x[0], -1); }, "torch.cummax(x[0], -1)", "f32 read + f32 values + int64 indices"},
      {"logcumsumexp dim -1", {uscan}, 2 * kF32 * uS, [](const In& x) { return kiln::logcumsumexp(x[0], -1); }, "torch.logcumsumexp(x[0], -1)", rw, true},
      // ---- nan-reductions (1 in 8 NaN) ----
      {"nansum", {{mat, "nan"}}, kF32 * N, [](const In& x) { return kiln::nansum(x[0]); }, "torch.nansum(x[0])", "1 read"},
      {"nanmean dim -1", {{mat, "nan"}}, kF32 * (N + double(rows)), [](const In& x) { return kiln::nanmean(x[0], std::vector<int>{-1}); }, "torch.nanmean(x[0], -1)", "1 read + 1 write of a value per row"},
      // ---- spatial sampling (gathers at computed points: compute-bound) ----
      {"grid_sample bilinear", {img, {grid, "grid"}}, kF32 * (2 * I + G), [](const In& x) { return kiln::grid_sample(x[0], x[1]); }, "torch.nn.functional.grid_sample(x[0], x[1], align_corners=False)", "input + grid read, 1 write", true},
      {"grid_sample bicubic reflection", {img, {grid, "grid"}}, kF32 * (2 * I + G), [](const In& x) { return kiln::grid_sample(x[0], x[1], "bicubic", "reflection"); }, "torch.nn.functional.grid_sample(x[0], x[1], 'bicubic', 'reflection', align_corners=False)", "input + grid read, 1 write", true},
      {"fractional_max_pool2d 2x2", {img, {{batch, chans, 2}, "uniform"}}, kF32 * I + 12 * I / 4, [pooled](const In& x) { return kiln::fractional_max_pool(x[0], {2, 2}, pooled, x[1]).values; }, "torch.nn.functional.fractional_max_pool2d(x[0], 2, output_size=(128, 128), _random_samples=x[1])", "1 read + f32 values and int64 indices of a quarter"},
      // ---- sorting (compute-bound) ----
      {"sort rows of 4096", {sort_rows}, 16 * mS, [](const In& x) { return kiln::sort(x[0], -1); }, "torch.sort(x[0], -1)", "f32 read + f32 values + int64 indices", true},
      {"sort 1-d", {sort_vec}, 16 * double(m), [](const In& x) { return kiln::sort(x[0], -1); }, "torch.sort(x[0], -1)", "f32 read + f32 values + int64 indices", true},
      {"argsort rows of 4096", {sort_rows}, 12 * mS, [](const In& x) { return kiln::argsort(x[0], -1); }, "torch.argsort(x[0], -1)", "f32 read + int64 indices", true},
      {"argsort 1-d", {sort_vec}, 12 * double(m), [](const In& x) { return kiln::argsort(x[0], -1); }, "torch.argsort(x[0], -1)", "f32 read + int64 indices", true},
      {"unique 1-d (inverse, counts)", {sort_vec}, 28 * double(m), [](const In& x) { return kiln::unique(x[0], true, true); }, "torch.unique(x[0], return_inverse=True, return_counts=True)", "f32 read + sort + f32 values + int64 inverse and counts", true},
      {"searchsorted 4096", {{{cols}, "sorted"}, uvec}, 12 * U, [](const In& x) { return kiln::searchsorted(x[0], x[1]); }, "torch.searchsorted(x[0], x[1])", "f32 read of the values + int64 positions (4096 boundaries stay in L1)", true},
      {"topk 50 rows of 32768", {topk_rows}, kF32 * mT, [](const In& x) { return kiln::topk(x[0], 50, -1); }, "torch.topk(x[0], 50, -1)", "f32 read (the k outputs are negligible)", true},
      // ---- order statistics (selection; mode sorts each row) ----
      {"median rows of 4096", {sort_rows}, kF32 * mS, [](const In& x) { return kiln::median(x[0], -1); }, "torch.median(x[0], -1)", "f32 read (a value and an index per row)", true},
      {"median 1-d", {sort_vec}, kF32 * double(m), [](const In& x) { return kiln::median(x[0]); }, "torch.median(x[0])", "f32 read", true},
      {"kthvalue 100 rows of 4096", {sort_rows}, kF32 * mS, [](const In& x) { return kiln::kthvalue(x[0], 100, -1); }, "torch.kthvalue(x[0], 100, -1)", "f32 read (a value and an index per row)", true},
      {"mode rows of 4096", {sort_rows}, kF32 * mS, [](const In& x) { return kiln::mode(x[0], -1); }, "torch.mode(x[0], -1)", "f32 read (a value and an index per row)", true},
      // ---- random factories (Philox draws, compute-bound) ----
      {"rand", {}, kF32 * U, [u](const In&) { return kiln::rand({u}); }, "torch.rand(" + std::to_string(u) + ")", "1 write", true},
      {"randn", {}, kF32 * U, [u](const In&) { return kiln::randn({u}); }, "torch.randn(" + std::to_string(u) + ")", "1 write", true},
      {"randint", {}, 8 * U, [u](const In&) { return kiln::randint(0, 1000, {u}); }, "torch.randint(0, 1000, (" + std::to_string(u) + ",))", "1 int64 write", true},
      // ---- special functions (compute-bound); exp as the reference point ----
      {"exp", {uvec}, 2 * kF32 * U, [](const In& x) { return kiln::exp(x[0]); }, "torch.exp(x[0])", rw},
      {"erf", {uvec}, 2 * kF32 * U, [](const In& x) { return kiln::erf(x[0]); }, "torch.erf(x[0])", rw, true},
      {"lgamma", {uvec}, 2 * kF32 * U, [](const In& x) { return kiln::lgamma(x[0]); }, "torch.lgamma(x[0])", rw, true},
      {"digamma", {uvec}, 2 * kF32 * U, [](const In& x) { return kiln::digamma(x[0]); }, "torch.digamma(x[0])", rw, true},
      {"i0", {uvec}, 2 * kF32 * U, [](const In& x) { return kiln::i0(x[0]); }, "torch.i0(x[0])", rw, true},
  };
  // clang-format on
}

// Times one case on kiln; *peer gets the torch peer's case (same inputs,
// same number of copies).
bench::Result time_case(bench::Runner& runner, const HotRun& run, const HotCase& c, json* peer) {
  kiln::manual_seed(5);
  std::vector<In> xs(1);
  json inputs = json::array();
  double in_bytes = 0;
  for (const HotInput& in : c.inputs) {
    xs[0].push_back(make_input(in));
    in_bytes += double(xs[0].back().numel()) * double(itemsize(xs[0].back().dtype()));
    inputs.push_back({{"shape", in.shape}, {"fill", in.fill}});
  }
  const double out_bytes = std::max(c.bytes - in_bytes, 0.0);
  // Compute-bound: the roof pass before each call leaves the input cold
  // anyway; a second copy only lets the untimed call before the timed one
  // run on other data, as for the memory-bound cases.
  const bench::Rotation rot = c.compute ? bench::plan_rotation(in_bytes, out_bytes, run.quick ? 1 : 2)
                                        : run.rotation(in_bytes, out_bytes);
  for (int i = 1; i < rot.copies; ++i) {
    In copy;
    for (const Tensor& t : xs[0]) copy.push_back(t.clone());
    xs.push_back(std::move(copy));
  }
  bench::Result r =
      runner.memory_case(c.name, c.bytes, rot, [&](int i) { c.kiln(xs[size_t(i % rot.copies)]); });
  if (c.compute) r.roof_fraction = 0;  // the memory roof does not bound it
  r.extra["group"] = "hot";
  r.extra["bound"] = c.compute ? "compute" : "memory";
  r.extra["inputs"] = inputs;
  r.extra["bytes_note"] = c.bytes_note;
  r.extra["torch_expr"] = c.torch;
  *peer = {{"name", c.name}, {"kind", "op"}, {"inputs", inputs}, {"expr", c.torch}, {"copies", rot.copies}};
  return r;
}

}  // namespace

json run_hot_cases(bench::Runner& runner, const HotRun& run) {
  json peer_cases = json::array();
  for (const HotCase& c : hot_cases(run.n)) {
    if (!run.filter.empty() && c.name.find(run.filter) == std::string::npos) continue;
    json peer;
    const bench::Result r = time_case(runner, run, c, &peer);  // its inputs are freed on return
    run.record(r);
    peer_cases.push_back(peer);
  }
  return peer_cases;
}

double hot_geomean_speedup(const json& results, int* count) {
  double s = 0;
  int k = 0;
  for (const json& r : results) {
    if (r.value("group", std::string()) != "hot" || !r.contains("speedup_vs_torch")) continue;
    s += std::log(r["speedup_vs_torch"].get<double>());
    ++k;
  }
  *count = k;
  return k > 0 ? std::exp(s / k) : 0.0;
}

}  // namespace kiln::cli
