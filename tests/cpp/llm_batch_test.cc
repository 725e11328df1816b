// Several sequences in one step (Model::forward_batch): each sequence's logits
// equal those forward() computes for its tokens alone, across prefill chunks,
// decode steps, copied prefixes and truncation, on every tiny fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/llm/model.h"

namespace fs = std::filesystem;
using kiln::Tensor;
using kiln::llm::Model;

namespace {

std::string models_dir() { return std::string(KILN_TEST_DATA_DIR) + "/models"; }

std::vector<std::string> fixtures() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(models_dir()))
    if (e.is_directory() && fs::exists(e.path() / "config.json")) v.push_back(e.path().filename());
  std::sort(v.begin(), v.end());
  return v;
}

// max |a - b| / max |b| over one row of V floats.
double rel_err(const float* a, const float* b, int64_t V) {
  double md = 0, mr = 0;
  for (int64_t i = 0; i < V; ++i) {
    md = std::max(md, std::abs(double(a[i]) - double(b[i])));
    mr = std::max(mr, std::abs(double(b[i])));
  }
  return md / std::max(mr, 1e-30);
}

// forward()'s logits for every position of `ids` [n, V], from an empty cache.
std::vector<float> alone(Model& m, const std::vector<int32_t>& ids) {
  m.reset();
  const Tensor lg = m.forward(ids, true);
  std::vector<float> out(lg.data<float>(), lg.data<float>() + lg.numel());
  m.reset();
  return out;
}

std::span<const int32_t> part(const std::vector<int32_t>& v, size_t from, size_t to) {
  return std::span<const int32_t>(v.data() + from, to - from);
}

class BatchedSequences : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchedSequences, EachSequenceEqualsItsOwnForward) {
  kiln::llm::LoadOptions o;
  o.weights = kiln::llm::WeightFormat::F32;
  o.kv_dtype = kiln::DType::Float32;
  auto m = Model::load(models_dir() + "/" + GetParam(), o);
  const int64_t V = m->config().vocab_size;
  const int32_t hi = int32_t(std::min<int64_t>(V, 200));
  std::vector<int32_t> a, b, c;
  for (int32_t i = 0; i < 13; ++i) a.push_back((i * 37 + 11) % hi);
  for (int32_t i = 0; i < 8; ++i) b.push_back((i * 53 + 5) % hi);
  for (int32_t i = 0; i < 9; ++i) c.push_back((i * 29 + 3) % hi);
  const auto ra = alone(*m, a), rb = alone(*m, b), rc = alone(*m, c);
  auto row = [&](const std::vector<float>& r, int64_t i) { return r.data() + i * V; };
  const double tol = 1e-5;

  const auto sa = m->open_sequence(), sb = m->open_sequence(), sc = m->open_sequence();
  EXPECT_EQ(m->open_sequences(), 3);
  // Step 1: three prefill chunks of different lengths.
  {
    const Model::BatchItem items[] = {{sa, part(a, 0, 5)}, {sb, part(b, 0, 7)}, {sc, part(c, 0, 1)}};
    const Tensor lg = m->forward_batch(items);
    ASSERT_EQ(lg.size(0), 3);
    ASSERT_EQ(lg.size(1), V);
    EXPECT_LT(rel_err(lg.data<float>(), row(ra, 4), V), tol);
    EXPECT_LT(rel_err(lg.data<float>() + V, row(rb, 6), V), tol);
    EXPECT_LT(rel_err(lg.data<float>() + 2 * V, row(rc, 0), V), tol);
  }
  // Step 2: a prefill continued, a decode token, a prefill finished.
  {
    const Model::BatchItem items[] = {{sc, part(c, 1, 9)}, {sb, part(b, 7, 8)}, {sa, part(a, 5, 12)}};
    const Tensor lg = m->forward_batch(items);
    EXPECT_LT(rel_err(lg.data<float>(), row(rc, 8), V), tol);
    EXPECT_LT(rel_err(lg.data<float>() + V, row(rb, 7), V), tol);
    EXPECT_LT(rel_err(lg.data<float>() + 2 * V, row(ra, 11), V), tol);
  }
  EXPECT_EQ(m->sequence_position(sa), 12);
  EXPECT_EQ(m->sequence_position(sc), 9);
  // Step 3: one token alone (the matrix-vector path).
  {
    const Model::BatchItem items[] = {{sa, part(a, 12, 13)}};
    EXPECT_LT(rel_err(m->forward_batch(items).data<float>(), row(ra, 12), V), tol);
  }
  // A copied prefix continues as the original would.
  const auto sd = m->open_sequence();
  m->copy_sequence(sa, sd, 6);
  EXPECT_EQ(m->sequence_position(sd), 6);
  // Truncation forgets the tail.
  m->truncate_sequence(sb, 3);
  {
    const Model::BatchItem items[] = {{sd, part(a, 6, 10)}, {sb, part(b, 3, 8)}};
    const Tensor lg = m->forward_batch(items);
    EXPECT_LT(rel_err(lg.data<float>(), row(ra, 9), V), tol);
    EXPECT_LT(rel_err(lg.data<float>() + V, row(rb, 7), V), tol);
  }
  // forward()'s own cache was never touched.
  EXPECT_EQ(m->position(), 0);

  // Errors name the problem.
  {
    const Model::BatchItem twice[] = {{sa, part(a, 0, 1)}, {sa, part(a, 1, 2)}};
    EXPECT_THROW(m->forward_batch(twice), kiln::ValueError);
    const std::vector<int32_t> bad = {int32_t(V)};
    const Model::BatchItem oob[] = {{sb, part(bad, 0, 1)}};
    EXPECT_THROW(m->forward_batch(oob), kiln::ValueError);
    std::vector<int32_t> many(size_t(m->max_batch_tokens() + 1), 1);
    const Model::BatchItem big[] = {{sb, part(many, 0, many.size())}};
    EXPECT_THROW(m->forward_batch(big), kiln::ValueError);
    EXPECT_THROW(m->truncate_sequence(sb, m->sequence_position(sb) + 1), kiln::ValueError);
    EXPECT_THROW(m->copy_sequence(sa, sa, 1), kiln::ValueError);
  }
  m->close_sequence(sb);
  EXPECT_THROW(m->sequence_position(sb), kiln::ValueError);
  EXPECT_THROW(m->close_sequence(sb), kiln::ValueError);
  EXPECT_EQ(m->open_sequences(), 3);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BatchedSequences, ::testing::ValuesIn(fixtures()), [](const auto& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
});

}  // namespace
