// kiln convert, checked through the runtime: every tiny fixture converted at
// each dtype loads back and gives the same logits as its source at that dtype.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/io/safetensors.h"
#include "kiln/llm/model.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

int run(const std::string& args) {
  const std::string cmd = std::string("'") + KILN_CLI_PATH + "' " + args + " >/dev/null 2>&1";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::vector<float> logits_of(llm::Model& m, const std::vector<int32_t>& ids) {
  m.reset(0);
  Tensor l = m.forward(ids, /*all_logits=*/true).contiguous();
  const float* p = static_cast<const float*>(l.data_ptr());
  return std::vector<float>(p, p + l.numel());
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kiln-convert-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

class ConvertRoundTrip : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(ConvertRoundTrip, SameLogitsAsTheSource) {
  const auto [name, dtype] = GetParam();
  const std::string src = std::string(KILN_TEST_DATA_DIR) + "/models/" + name;
  TempDir out;
  const std::string dst = out.path + "/converted";
  ASSERT_EQ(run("convert '" + src + "' '" + dst + "' --dtype " + dtype + " -q"), 0);
  ASSERT_TRUE(fs::exists(dst + "/model.safetensors"));
  ASSERT_TRUE(fs::exists(dst + "/config.json"));

  llm::LoadOptions lo;
  lo.weights = llm::weight_format_from_name(dtype);
  auto a = llm::Model::load(src, lo);
  auto b = llm::Model::load(dst, lo);
  EXPECT_EQ(b->weight_format(), a->weight_format());
  EXPECT_EQ(b->weight_bytes(), a->weight_bytes());
  // The converted weights are used as they are: the same bytes, not requantized.
  const auto wa = a->named_weights(), wb = b->named_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].first, wb[i].first);
    EXPECT_EQ(wa[i].second.dtype(), wb[i].second.dtype()) << wa[i].first;
    // bf16 / f32 mean what they say, for FP8 sources too.
    if (std::string(dtype) != "fp8") { EXPECT_FALSE(is_fp8(wb[i].second.dtype())) << wb[i].first; }
  }
  if (std::string(dtype) != "fp8") {
    std::ifstream cf(dst + "/config.json");
    const std::string cfg((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
    EXPECT_EQ(cfg.find("quantization_config"), std::string::npos) << name << " " << dtype;
  }
  std::string ref_dir = src;  // a GGUF fixture uses the reference of the checkpoint it was written from
  if (ref_dir.size() > 5 && ref_dir.substr(ref_dir.size() - 5) == ".gguf") ref_dir.resize(ref_dir.size() - 5);
  const auto ref = io::SafetensorsFile::open(ref_dir + "/reference.safetensors");
  const Tensor ids_t = ref.tensor("input_ids").to(DType::Int64).contiguous();
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < ids_t.numel(); ++i)
    ids.push_back(int32_t(static_cast<const int64_t*>(ids_t.data_ptr())[i]));
  const auto la = logits_of(*a, ids), lb = logits_of(*b, ids);
  ASSERT_EQ(la.size(), lb.size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(la[i] - lb[i])));
    max_abs = std::max(max_abs, double(std::fabs(la[i])));
  }
  EXPECT_LE(max_diff, 1e-5 * std::max(1.0, max_abs)) << name << " " << dtype;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertRoundTrip,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3",
                                                              "tiny-qwen3-moe", "tiny-mixtral", "tiny-olmoe",
                                                              "tiny-qwen3-moe-fp8-block",
                                                              "tiny-qwen3-moe-fp8-channel",
                                                              "tiny-qwen3-moe.gguf", "tiny-llama.gguf"),
                                            ::testing::Values("f32", "bf16", "fp8")),
                         [](const auto& info) {
                           std::string s =
                               std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });
