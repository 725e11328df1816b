// `kiln bench linear --gguf-types Q4_K,...`: one-token block_linear over the
// decode shapes, each weight as random blocks of a ggml type read as stored,
// in GB/s of block bytes and fraction of the read roof measured beside it.
#include <cstring>
#include <random>

#include "bench_matmul.h"
#include "kiln/block_quant.h"
#include "kiln/kiln.h"

namespace kiln::cli::matbench {
namespace {

// N rows of K elements of random bytes (scales included: any f16 value
// but inf and NaN, whose bit patterns are redrawn; the kernels do the same
// work whatever the values).
Tensor random_blocks(BlockType t, int64_t N, int64_t K, uint32_t seed) {
  Tensor b = empty({N, block_row_bytes(t, K)}, DType::UInt8);
  std::mt19937 rng(seed);
  uint8_t* p = b.data<uint8_t>();
  for (int64_t i = 0; i < b.numel(); ++i) p[i] = uint8_t(rng());
  while (!block_scales_finite(b, t))
    for (int64_t i = 0; i < b.numel(); ++i)
      if ((p[i] & 0x7C) == 0x7C) p[i] = uint8_t(p[i] & ~0x40);  // exponent below all-ones
  return b;
}

}  // namespace

void gguf_decode_cases(Ctx& c) {
  const json doc = read_json(c.opt.cases);
  std::vector<json> shapes(doc["shapes"].begin(), doc["shapes"].end());
  if (c.opt.quick) shapes = {json{{"model", "quick"}, {"layer", "tiny"}, {"N", 256}, {"K", 512}}};
  if (c.opt.limit > 0 && int(shapes.size()) > c.opt.limit) shapes.resize(size_t(c.opt.limit));
  std::map<std::string, std::vector<double>> fractions;
  size_t from = 0;
  while (from <= c.opt.gguf_types.size()) {
    size_t to = c.opt.gguf_types.find(',', from);
    if (to == std::string::npos) to = c.opt.gguf_types.size();
    const std::string tn = c.opt.gguf_types.substr(from, to - from);
    from = to + 1;
    if (tn.empty()) continue;
    const std::optional<BlockType> t = block_type_from_name(tn);
    if (!t)
      throw std::runtime_error("[bench] unknown ggml block type " + tn + " (" + block_type_names() + ")");
    const BlockTypeInfo& info = block_type_info(*t);
    for (const json& s : shapes) {
      const int64_t N = s["N"], K = s["K"];
      if (K % info.block_size) continue;  // rows that are not whole blocks
      const double per_copy = double(N * block_row_bytes(*t, K));
      const int maxc = c.opt.quick ? 1 : std::max(1, std::min(1 << 16, int(mem_budget() / per_copy)));
      const bench::Rotation rot = bench::plan_rotation(per_copy, 0, maxc);
      const Tensor w0 = random_blocks(*t, N, K, 7);
      std::vector<Tensor> ws{w0};
      for (int i = 1; i < rot.copies; ++i) ws.push_back(w0.clone());
      const std::string name = "linear " + std::string(info.name) + " " + s.value("model", "") + " " +
                               s.value("layer", "") + " " + std::to_string(N) + "x" + std::to_string(K);
      const int calls = std::max(1, std::min(rot.copies / 2, int(std::ceil(double(16 << 20) / per_copy))));
      const Tensor x = randn({1, K});
      Tensor out = empty({1, N});
      bench::Result r = c.runner.memory_case(
          name, per_copy + 4.0 * double(K + N), rot,
          [&](int i) { block_linear_out(x, ws[size_t(i % rot.copies)], *t, Tensor(), out); }, calls);
      r.extra["kind"] = info.name;
      r.extra["N"] = N;
      r.extra["K"] = K;
      fractions[info.name].push_back(r.roof_fraction);
      record(c, r);
    }
  }
  for (auto& [kn, f] : fractions) c.summary["geomean_roof_fraction"][kn] = geomean(f);
}

}  // namespace kiln::cli::matbench
