// The LLM runtime against transformers' logits for the tiny fixtures
// (tests/data/models/*/reference.safetensors), the KV-cache path against the
// one-shot prefill, weight formats, named_weights reload and load errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/io/safetensors.h"
#include "kiln/llm/generate.h"
#include "kiln/llm/model.h"

namespace fs = std::filesystem;
using kiln::Tensor;
using kiln::llm::LoadOptions;
using kiln::llm::Model;
using kiln::llm::WeightFormat;

namespace {

std::string models_dir() { return std::string(KILN_TEST_DATA_DIR) + "/models"; }

struct Reference {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // [12, V]
  int64_t V = 0;
};

Reference reference(const std::string& dir) {
  auto f = kiln::io::SafetensorsFile::open(dir + "/reference.safetensors");
  Reference r;
  const Tensor ids = f.tensor("input_ids").to(kiln::DType::Int64).contiguous();
  for (int64_t i = 0; i < ids.numel(); ++i) r.ids.push_back(int32_t(ids.data<int64_t>()[i]));
  const Tensor lg = f.tensor("logits").to(kiln::DType::Float32).contiguous();
  r.V = lg.size(-1);
  r.logits.assign(lg.data<float>(), lg.data<float>() + lg.numel());
  return r;
}

// max |a - b| / max |b| over n floats.
double rel_err(const float* a, const float* b, int64_t n) {
  double md = 0, mr = 0;
  for (int64_t i = 0; i < n; ++i) {
    md = std::max(md, std::abs(double(a[i]) - double(b[i])));
    mr = std::max(mr, std::abs(double(b[i])));
  }
  return md / std::max(mr, 1e-30);
}

std::vector<std::string> fixtures() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(models_dir()))
    if (e.is_directory() && fs::exists(e.path() / "reference.safetensors")) v.push_back(e.path().filename());
  std::sort(v.begin(), v.end());
  return v;
}

LoadOptions opts(WeightFormat f) {
  LoadOptions o;
  o.weights = f;
  o.kv_dtype = kiln::DType::Float32;
  return o;
}

class TinyModel : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModel, F32LogitsMatchTransformers) {
  const std::string dir = models_dir() + "/" + GetParam();
  const Reference ref = reference(dir);
  auto m = Model::load(dir, opts(WeightFormat::F32));
  ASSERT_EQ(m->config().vocab_size, ref.V);
  const Tensor lg = m->forward(ref.ids, true);
  ASSERT_EQ(lg.size(0), int64_t(ref.ids.size()));
  ASSERT_EQ(lg.size(1), ref.V);
  EXPECT_LT(rel_err(lg.data<float>(), ref.logits.data(), lg.numel()), 1e-4) << GetParam();
  EXPECT_EQ(m->position(), int64_t(ref.ids.size()));
  EXPECT_GT(m->bytes_read_last_forward(), 0);
}

TEST_P(TinyModel, DecodeStepsEqualPrefill) {
  const std::string dir = models_dir() + "/" + GetParam();
  const Reference ref = reference(dir);
  auto m = Model::load(dir, opts(WeightFormat::F32));
  const int64_t n = int64_t(ref.ids.size()), V = ref.V;
  std::vector<float> all(size_t(n * V));
  {
    const Tensor lg = m->forward(ref.ids, true);
    std::copy(lg.data<float>(), lg.data<float>() + n * V, all.begin());
  }
  m->reset();
  for (int64_t i = 0; i < n; ++i) {
    const Tensor lg = m->forward(std::span<const int32_t>(&ref.ids[size_t(i)], 1));
    ASSERT_EQ(lg.size(0), 1);
    EXPECT_LT(rel_err(lg.data<float>(), all.data() + i * V, V), 1e-5) << GetParam() << " position " << i;
  }
  // A prefill on a filled cache (q_len != kv_len) agrees too.
  m->reset(5);
  const Tensor lg = m->forward(std::span<const int32_t>(ref.ids.data() + 5, size_t(n - 5)), true);
  EXPECT_LT(rel_err(lg.data<float>(), all.data() + 5 * V, (n - 5) * V), 1e-5) << GetParam();
}

TEST_P(TinyModel, Bf16AndFp8CloseToReference) {
  const std::string dir = models_dir() + "/" + GetParam();
  const Reference ref = reference(dir);
  // Measured max|diff|/max|ref|: bf16 <= 0.02; fp8 <= 0.1 dense, up to 0.16 for
  // MoE, where a near-tie of two random router scores can flip an expert.
  const bool moe =
      GetParam().find("moe") != std::string::npos || GetParam().find("mixtral") != std::string::npos;
  for (auto [f, tol] :
       {std::pair{WeightFormat::BF16, 3e-2}, std::pair{WeightFormat::FP8, moe ? 0.2 : 0.12}}) {
    auto m = Model::load(dir, opts(f));
    const Tensor lg = m->forward(ref.ids, true);
    const double e = rel_err(lg.data<float>(), ref.logits.data(), lg.numel());
    EXPECT_LT(e, tol) << GetParam() << " " << kiln::llm::weight_format_name(f);
  }
}

TEST_P(TinyModel, NamedWeightsReloadWithoutConversion) {
  const std::string dir = models_dir() + "/" + GetParam();
  const Reference ref = reference(dir);
  for (WeightFormat f : {WeightFormat::FP8, WeightFormat::BF16}) {
    auto m = Model::load(dir, opts(f));
    const Tensor a = m->forward(ref.ids, true).clone();
    // Write the held weights and the config to a temporary directory, load it back.
    const fs::path tmp =
        fs::temp_directory_path() / ("kiln_llm_named_" + GetParam() + "_" + kiln::llm::weight_format_name(f));
    fs::create_directories(tmp);
    fs::copy_file(fs::path(dir) / "config.json", tmp / "config.json", fs::copy_options::overwrite_existing);
    kiln::io::save_safetensors((tmp / "model.safetensors").string(), m->named_weights());
    auto r = Model::load(tmp.string(), opts(f));
    EXPECT_EQ(r->weight_bytes(), m->weight_bytes());
    const Tensor b = r->forward(ref.ids, true);
    EXPECT_LT(rel_err(b.data<float>(), a.data<float>(), a.numel()), 1e-6) << GetParam();
    fs::remove_all(tmp);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyModel, ::testing::ValuesIn(fixtures()), [](const auto& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
});

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(LlmErrors, OneLineMessages) {
  const fs::path tmp = fs::temp_directory_path() / "kiln_llm_errors";
  fs::create_directories(tmp);
  std::vector<std::string> msgs;
  msgs.push_back(error_of([&] { Model::load((tmp / "missing.gguf").string()); }));
  { std::ofstream(tmp / "corrupt.gguf") << "GGUF\x03garbage"; }
  msgs.push_back(error_of([&] { Model::load((tmp / "corrupt.gguf").string()); }));
  fs::create_directories(tmp / "gpt2");
  { std::ofstream(tmp / "gpt2" / "config.json") << R"({"model_type": "gpt2", "vocab_size": 10})"; }
  msgs.push_back(error_of([&] { Model::load((tmp / "gpt2").string()); }));
  auto m = Model::load(models_dir() + "/tiny-qwen3", opts(WeightFormat::F32));
  const std::vector<int32_t> bad = {1, 256};
  msgs.push_back(error_of([&] { m->forward(bad); }));
  std::vector<int32_t> longp(size_t(m->max_context() + 1), 1);
  msgs.push_back(error_of([&] { m->forward(longp); }));
  msgs.push_back(error_of([&] { kiln::llm::Generation(*m, longp, {}); }));
  msgs.push_back(error_of([&] { m->tokenizer(); }));
  for (const auto& s : msgs) {
    EXPECT_EQ(s.rfind("[llm]", 0), 0u) << s;
    EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  }
  EXPECT_EQ(m->position(), 0);  // the failed forwards left the cache alone
  fs::remove_all(tmp);
}

TEST(LlmGenerate, GreedyStopsAtLengthAndIsReproducible) {
  auto m = Model::load(models_dir() + "/tiny-llama", opts(WeightFormat::F32));
  const std::vector<int32_t> prompt = {5, 6, 7, 8};
  kiln::llm::GenerateOptions o;
  o.max_tokens = 10;
  o.sampling.temperature = 0;
  o.stop_at_eos = false;
  kiln::llm::Generation g(*m, prompt, o);
  std::string piece;
  while (g.next(piece)) {
  }
  EXPECT_EQ(g.generated().size(), 10u);
  EXPECT_EQ(g.stats().stop_reason, "length");
  // Greedy = argmax of the logits of the whole sequence, position by position.
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), g.generated().begin(), g.generated().end() - 1);
  m->reset();
  const Tensor lg = m->forward(seq, true);
  const int64_t V = lg.size(1);
  for (size_t i = 0; i < g.generated().size(); ++i) {
    const float* row = lg.data<float>() + (int64_t(prompt.size()) - 1 + int64_t(i)) * V;
    EXPECT_EQ(std::max_element(row, row + V) - row, g.generated()[i]) << i;
  }
  // Seeded sampling repeats; context overflow stops with "context".
  o.sampling.temperature = 0.8;
  o.seed = 7;
  m->reset();
  auto a = kiln::llm::Generation(*m, prompt, o);
  while (a.next(piece)) {
  }
  m->reset();
  auto b = kiln::llm::Generation(*m, prompt, o);
  while (b.next(piece)) {
  }
  EXPECT_EQ(a.generated(), b.generated());
  m->reset();
  o.max_tokens = 1000;
  auto c = kiln::llm::Generation(*m, prompt, o);
  while (c.next(piece)) {
  }
  EXPECT_EQ(c.stats().stop_reason, "context");
  EXPECT_EQ(m->position(), m->max_context());
}

TEST(LlmPerplexity, MatchesLogSoftmaxOfTheLogits) {
  auto m = Model::load(models_dir() + "/tiny-qwen2", opts(WeightFormat::F32));
  const Reference ref = reference(models_dir() + "/tiny-qwen2");
  const Tensor lg = m->forward(ref.ids, true);
  double nll = 0;
  const int64_t V = lg.size(1), n = int64_t(ref.ids.size());
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* row = lg.data<float>() + i * V;
    double mx = *std::max_element(row, row + V), s = 0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - mx);
    nll += mx + std::log(s) - row[ref.ids[size_t(i + 1)]];
  }
  const double want = std::exp(nll / double(n - 1));
  EXPECT_NEAR(kiln::llm::perplexity(*m, ref.ids), want, 1e-4 * want);
  // Windows of 5 overlapping by one predict the same tokens with less context.
  const double w5 = kiln::llm::perplexity(*m, ref.ids, 5);
  EXPECT_TRUE(std::isfinite(w5) && w5 > 1);
}

}  // namespace
