// GGUF: a hand-built file parsed (metadata types, tensor infos, alignment),
// block dequantization against a double-precision reference of the layouts,
// Q/K row order, and malformed files refused.
#include "kiln/io/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kiln/float_types.h"
#include "kiln/kiln.h"

using namespace kiln;
using namespace kiln::io;

namespace {

struct Builder {
  std::string kv, ti, data;
  int n_kv = 0, n_t = 0;
  template <typename T>
  static std::string pod(T v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
  }
  static std::string str(const std::string& s) { return pod<uint64_t>(s.size()) + s; }
  void add_u32(const std::string& k, uint32_t v) {
    kv += str(k) + pod<uint32_t>(4) + pod(v);
    ++n_kv;
  }
  void add_str(const std::string& k, const std::string& v) {
    kv += str(k) + pod<uint32_t>(8) + str(v);
    ++n_kv;
  }
  void add_strs(const std::string& k, const std::vector<std::string>& v) {
    kv += str(k) + pod<uint32_t>(9) + pod<uint32_t>(8) + pod<uint64_t>(v.size());
    for (auto& s : v) kv += str(s);
    ++n_kv;
  }
  void add_tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                  const std::string& bytes) {
    while (data.size() % 32) data.push_back('\0');
    ti += str(name) + pod<uint32_t>(ne.size());
    for (auto d : ne) ti += pod(d);
    ti += pod(type) + pod<uint64_t>(data.size());
    data += bytes;
    ++n_t;
  }
  std::string build() const {
    std::string out = "GGUF" + pod<uint32_t>(3) + pod<uint64_t>(n_t) + pod<uint64_t>(n_kv) + kv + ti;
    while (out.size() % 32) out.push_back('\0');
    return out + data;
  }
};

uint16_t h(float f) { return float_to_f16_bits(f); }

}  // namespace

TEST(Gguf, ParsesMetadataAndDequantizes) {
  Builder b;
  b.add_str("general.architecture", "llama");
  b.add_u32("llama.attention.head_count", 2);
  b.add_strs("tokenizer.ggml.tokens", {"a", "b", "\xc3\xbc"});
  // Q8_0: one block, d = 0.5, q = -16..15
  std::string q8 = Builder::pod(h(0.5f));
  for (int j = 0; j < 32; ++j) q8.push_back(char(int8_t(j - 16)));
  b.add_tensor("q8", {32}, 8, q8);
  // Q4_0: d = 0.25, nibbles lo = j, hi = 15 - j
  std::string q4 = Builder::pod(h(0.25f));
  for (int j = 0; j < 16; ++j) q4.push_back(char(j | ((15 - j) << 4)));
  b.add_tensor("q4", {32}, 2, q4);
  // Q4_1: d = 0.125, m = -1
  std::string q41 = Builder::pod(h(0.125f)) + Builder::pod(h(-1.0f));
  for (int j = 0; j < 16; ++j) q41.push_back(char(j | ((15 - j) << 4)));
  b.add_tensor("q41", {32}, 3, q41);
  std::string f32;
  for (int j = 0; j < 6; ++j) f32 += Builder::pod(float(j));
  b.add_tensor("f", {3, 2}, 0, f32);
  auto g = GGUFFile::from_file(MappedFile::from_bytes(b.build()));
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.architecture(), "llama");
  EXPECT_EQ(*g.get_int("llama.attention.head_count"), 2);
  ASSERT_NE(g.get_string_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens")->at(2), "\xc3\xbc");
  EXPECT_THROW(g.get_int("general.architecture"), TypeError);
  EXPECT_FALSE(g.get_int("nope").has_value());

  Tensor q8t = g.dequantize("q8");
  for (int j = 0; j < 32; ++j) EXPECT_EQ(q8t.data<float>()[j], double(j - 16) * 0.5);
  Tensor q4t = g.dequantize("q4");
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(q4t.data<float>()[j], double(j - 8) * 0.25);
    EXPECT_EQ(q4t.data<float>()[j + 16], double(15 - j - 8) * 0.25);
  }
  Tensor q41t = g.dequantize("q41");
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(q41t.data<float>()[j], double(j) * 0.125 - 1.0);
    EXPECT_EQ(q41t.data<float>()[j + 16], double(15 - j) * 0.125 - 1.0);
  }
  Tensor f = g.tensor("f");
  EXPECT_EQ(f.sizes(), (Shape{2, 3}));  // ne = [3, 2] -> PyTorch [2, 3]
  EXPECT_EQ(f.data<float>()[4], 4.0f);
  EXPECT_THROW(g.tensor("q8"), TypeError);
  EXPECT_EQ(g.raw("q4").sizes(), (Shape{18}));
  EXPECT_THROW(g.tensor("nope"), IndexError);
}

TEST(Gguf, UnpermuteQkRows) {
  // 2 heads of dim 4: GGUF rows per head are (0,2),(1,3) interleaved -> HF order 0,1,2,3.
  const int64_t n_head = 2, d = 4;
  Tensor w = arange(0, n_head * d, 1, DType::Float32).view({n_head * d, 1});
  Tensor u = unpermute_qk_rows(w, n_head);
  // HF row h*d + j*d/2 + i comes from GGUF row h*d + 2*i + j.
  for (int64_t hh = 0; hh < n_head; ++hh)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < d / 2; ++i)
        EXPECT_EQ(u.data<float>()[hh * d + j * d / 2 + i], float(hh * d + 2 * i + j));
  EXPECT_THROW(unpermute_qk_rows(zeros({6, 2}), 2), ValueError);
}

TEST(Gguf, RefusesMalformedFiles) {
  Builder ok;
  ok.add_tensor("a", {4}, 0, std::string(16, '\0'));
  const std::string good = ok.build();
  EXPECT_NO_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(good.data()), good.size()));
  // Every truncation of a valid file is refused with ValueError (never a crash).
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(good.data()), n), ValueError) << n;
  }
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()), ValueError);
  Builder dup;
  dup.add_tensor("a", {4}, 0, std::string(16, '\0'));
  dup.add_tensor("a", {4}, 0, std::string(16, '\0'));
  const std::string d = dup.build();
  EXPECT_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(d.data()), d.size()), ValueError);
}

TEST(Gguf, UnsupportedTypesNamed) {
  Builder b;
  b.add_tensor("iq", {256}, 16, std::string(66, '\0'));  // IQ2_XXS: listed, not dequantized
  auto g = GGUFFile::from_file(MappedFile::from_bytes(b.build()));
  try {
    g.dequantize("iq");
    ADD_FAILURE();
  } catch (const NotImplementedError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("[gguf] tensor 'iq' is IQ2_XXS", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const char* t : {"Q4_0", "Q5_1", "Q2_K", "Q4_K", "Q6_K", "Q8_K", "IQ4_NL", "IQ4_XS"})
      EXPECT_NE(m.find(t), std::string::npos) << t << ": " << m;
  }
  // The row decoder refuses the same way, and refuses a partial block.
  std::vector<float> out(256);
  const std::string zeros(292, '\0');
  const auto* z = reinterpret_cast<const uint8_t*>(zeros.data());
  EXPECT_THROW(dequantize_row(GGMLType::IQ3_S, z, out.data(), 256), NotImplementedError);
  EXPECT_THROW(dequantize_row(GGMLType::Q4_K, z, out.data(), 128), ValueError);
  EXPECT_THROW(dequantize_row(GGMLType(4), z, out.data(), 32), ValueError);  // a retired number
  EXPECT_NO_THROW(dequantize_row(GGMLType::Q8_K, z, out.data(), 256));
}

// A K-quant tensor with fewer bytes than its blocks need is refused at open, by name.
TEST(Gguf, TruncatedBlockTensorRefusedByName) {
  for (uint32_t type : {10u, 11u, 12u, 13u, 14u, 15u, 23u}) {  // Q2_K .. Q8_K, IQ4_XS
    const uint32_t ts = ggml_type_info(type)->type_size;
    Builder b;
    b.add_tensor("k", {256, 3}, type, std::string(3 * ts, '\x11'));
    const std::string full = b.build();
    EXPECT_NO_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(full.data()), full.size()));
    for (size_t cut : {size_t(1), size_t(ts), size_t(3 * ts - 1)}) {
      try {
        parse_gguf(reinterpret_cast<const uint8_t*>(full.data()), full.size() - cut);
        ADD_FAILURE() << type << " " << cut;
      } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor 'k'"), std::string::npos) << e.what();
      }
    }
  }
}

// NaN/inf block scales are not refused: the elements follow IEEE arithmetic, as
// gguf-py's reference does (x = d * q: NaN * q = NaN, inf * 0 = NaN).
TEST(Gguf, NonFiniteScalesPropagate) {
  std::vector<float> out(256);
  std::string q8k(292, '\0');
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(q8k.data(), &nan, 4);
  q8k[4 + 7] = 3;
  dequantize_row(GGMLType::Q8_K, reinterpret_cast<const uint8_t*>(q8k.data()), out.data(), 256);
  for (float v : out) EXPECT_TRUE(std::isnan(v));
  // Q6_K with d = +inf: code 32 (q = 0) gives NaN, others +-inf by the sign of q * scale.
  std::string q6k(210, '\0');
  for (int g = 0; g < 16; ++g) q6k[192 + g] = 1;  // scales
  const uint16_t inf = h(std::numeric_limits<float>::infinity());
  std::memcpy(q6k.data() + 208, &inf, 2);
  q6k[128] = 0x02;  // element 0: hi bits 2 -> q = 32 - 32 = 0
  dequantize_row(GGMLType::Q6_K, reinterpret_cast<const uint8_t*>(q6k.data()), out.data(), 256);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());  // q = -32
}

#include "kiln/io/gguf_names.h"

TEST(Gguf, HfNames) {
  EXPECT_EQ(gguf_to_hf_name("token_embd.weight", "llama"), "model.embed_tokens.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.12.attn_q.weight", "llama"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.0.attn_k.bias", "qwen2"), "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_up_exps.weight", "qwen3_moe"),
            "model.layers.3.mlp.experts.up_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_gate_exps.weight", "mixtral"),
            "model.layers.3.block_sparse_moe.experts.w1.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.x.attn_q.weight", "llama"), "");
  EXPECT_EQ(gguf_to_hf_name("rope_freqs.weight", "llama"), "");
  EXPECT_EQ(gguf_to_hf_name("blk.1.attn_q", "llama"), "");
}
