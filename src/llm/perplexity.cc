// Perplexity over windows of the context, prefilled in chunks so only a
// [chunk, V] logits block is held at a time.
#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "kiln/llm/generate.h"

namespace kiln::llm {

double perplexity(Model& model, std::span<const int32_t> ids, int64_t window) {
  const int64_t n = int64_t(ids.size());
  KILN_CHECK(n >= 2, ValueError, "[llm] perplexity needs at least 2 tokens, got " << n);
  KILN_CHECK(window >= 0, ValueError,
             "[llm] perplexity window must be >= 0 (0: the whole context), got " << window);
  const Model::Use use(model, "[perplexity]");  // the logits views are read between forward calls
  const int64_t W = window > 0 ? std::min(window, model.max_context()) : model.max_context();
  KILN_CHECK(W >= 2, ValueError, "[llm] perplexity window must be at least 2 tokens, got " << W);
  constexpr int64_t kChunk = 128;
  double nll = 0;
  int64_t count = 0;
  // Windows overlap by one token so every token after the first is predicted once.
  for (int64_t s = 0; s + 1 < n; s += W - 1) {
    const int64_t len = std::min(W, n - s);
    model.reset(0);
    for (int64_t c = 0; c < len; c += kChunk) {
      const int64_t m = std::min(kChunk, len - c);
      const Tensor logits = model.forward(ids.subspan(size_t(s + c), size_t(m)), true);  // [m, V]
      const int64_t V = logits.size(1);
      const float* lp = logits.data<float>();
      for (int64_t i = 0; i < m; ++i) {
        const int64_t j = c + i;  // position in the window
        if (j + 1 >= len) break;
        const float* row = lp + i * V;
        float mx = row[0];
        for (int64_t v = 1; v < V; ++v) mx = std::max(mx, row[v]);
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - mx);
        nll += (double(mx) + std::log(sum)) - double(row[ids[size_t(s + j + 1)]]);
        ++count;
      }
    }
  }
  model.reset(0);
  return std::exp(nll / double(count));
}

}  // namespace kiln::llm
