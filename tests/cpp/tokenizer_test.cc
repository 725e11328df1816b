// Tokenizer tests: the Qwen3 golden ids (from an independent implementation),
// hand-checked BPE on small tokenizer.json files, byte-level and UTF-8
// helpers against their specifications, streaming, the GGUF-parts constructor
// and refused inputs. The comparison with Hugging Face `tokenizers` over a
// generated corpus lives in tests/python/test_tokenizer.py.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/tokenizer/impl.h"
#include "kiln/tokenizer.h"

using nlohmann::json;
using kiln::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const Tokenizer& qwen3() {
  static const Tokenizer t = Tokenizer::from_file(KILN_QWEN3_TOKENIZER);
  return t;
}

json golden() { return json::parse(slurp(std::string(KILN_TEST_DATA_DIR) + "/tokenizers/qwen3/golden.json")); }

// A GPT-2-style tokenizer.json: byte-level vocabulary of the 256 bytes plus
// merged tokens, "a b" merges, the GPT-2 regex inside ByteLevel.
json small_gpt2(const std::vector<std::string>& merges) {
  json vocab = json::object();
  int32_t id = 0;
  for (int b = 0; b < 256; ++b) vocab[kiln::tok::vocab_form_from_bytes(std::string(1, char(b)))] = id++;
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    const std::string merged = m.substr(0, sp) + m.substr(sp + 1);
    if (!vocab.contains(merged)) vocab[merged] = id++;
  }
  return json{{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
              {"post_processor", nullptr},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

Ids enc(const Tokenizer& t, const std::string& s) { return t.encode(s); }
std::vector<std::string> toks(const Tokenizer& t, const Ids& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(*t.id_to_token(id));
  return out;
}

}  // namespace

TEST(Tokenizer, Qwen3GoldenIds) {
  const json g = golden();
  ASSERT_GT(g.size(), 50u);
  for (const auto& c : g) {
    const std::string text = c["text"];
    EXPECT_EQ(qwen3().encode(text), c["ids"].get<Ids>()) << json(text).dump();
  }
}

TEST(Tokenizer, Qwen3RoundTripIsNfc) {
  for (const auto& c : golden()) {
    const std::string text = c["text"];
    const std::string nfc = kiln::tok::normalize(kiln::tok::Normalization::nfc, text);
    EXPECT_EQ(qwen3().decode(qwen3().encode(text)), nfc) << json(text).dump();
  }
}

TEST(Tokenizer, Qwen3Vocabulary) {
  const Tokenizer& t = qwen3();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_to_id("Hello"), 9707);
  EXPECT_EQ(t.id_to_token(220), "Ġ");
  EXPECT_FALSE(t.token_to_id("no such token").has_value());
  EXPECT_FALSE(t.id_to_token(-1).has_value());
  EXPECT_FALSE(t.id_to_token(1 << 20).has_value());
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_EQ(t.eos_id(), 151645);  // tokenizer_config.json: <|im_end|>
  EXPECT_EQ(t.pad_id(), 151643);
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_NE(t.chat_template().find("<|im_start|>"), std::string::npos);
  const Ids ids = t.encode("<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(t.decode(ids), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(t.decode(ids, /*skip_special_tokens=*/true), "user\nhi");
  EXPECT_EQ(t.encode("hi", /*add_special_tokens=*/true), t.encode("hi"));  // Qwen adds nothing
}

TEST(Tokenizer, ByteLevelAlphabet) {
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = kiln::tok::byte_to_codepoint(uint8_t(b));
    EXPECT_EQ(kiln::tok::byte_from_codepoint(cp), b);
    seen.insert(cp);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(kiln::tok::byte_to_codepoint(' '), 0x120u);  // "Ġ"
  EXPECT_EQ(kiln::tok::byte_to_codepoint('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(kiln::tok::byte_to_codepoint('A'), uint32_t('A'));
  EXPECT_EQ(kiln::tok::vocab_form_from_bytes(" the"), "Ġthe");
  EXPECT_EQ(kiln::tok::bytes_from_vocab_form("Ġthe"), " the");
}

TEST(Tokenizer, Utf8LossyMatchesMaximalSubpart) {
  using kiln::tok::utf8_lossy;
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("a\xFF" "b"), "a" + R + "b");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), R);             // truncated 4-byte: one replacement
  EXPECT_EQ(utf8_lossy("\xE0\x80"), R + R);             // overlong lead: each byte
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), R + R + R);     // surrogate
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8_lossy("\xC3"), R);
  EXPECT_EQ(kiln::tok::incomplete_utf8_tail("a\xF0\x9F"), 2u);
  EXPECT_EQ(kiln::tok::incomplete_utf8_tail("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(kiln::tok::incomplete_utf8_tail("a\xFF"), 0u);
  EXPECT_EQ(kiln::tok::incomplete_utf8_tail("\xE0\x80"), 0u);
}

TEST(Tokenizer, SmallBpeByHand) {
  // merges: rank 0 "a b", rank 1 "ab c", rank 2 "a a"
  const Tokenizer t = Tokenizer::from_json(small_gpt2({"a b", "ab c", "a a"}).dump());
  EXPECT_EQ(toks(t, enc(t, "abc")), (std::vector<std::string>{"abc"}));
  EXPECT_EQ(toks(t, enc(t, "aab")), (std::vector<std::string>{"a", "ab"}));   // "a b" outranks "a a"
  EXPECT_EQ(toks(t, enc(t, "aaa")), (std::vector<std::string>{"aa", "a"}));   // leftmost first
  EXPECT_EQ(toks(t, enc(t, "abc abc")), (std::vector<std::string>{"abc", "Ġ", "abc"}));  // " abc" is one pre-token
  EXPECT_EQ(toks(t, enc(t, "x  y")), (std::vector<std::string>{"x", "Ġ", "Ġ", "y"}));
  EXPECT_TRUE(enc(t, "").empty());
  // "a b" and ["a", "b"] merges are the same tokenizer
  json pairs = small_gpt2({"a b", "ab c", "a a"});
  pairs["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c"}), json::array({"a", "a"})});
  const Tokenizer t2 = Tokenizer::from_json(pairs.dump());
  for (const char* s : {"abc", "aab", "aaa", "cabca ab"}) EXPECT_EQ(enc(t2, s), enc(t, s)) << s;
}

TEST(Tokenizer, AddedTokensLongestMatchAndStrip) {
  json j = small_gpt2({"a b"});
  j["added_tokens"] = json::array({
      {{"id", 300}, {"content", "<x>"}, {"special", true}, {"lstrip", false}, {"rstrip", false}},
      {{"id", 301}, {"content", "<x>y"}, {"special", false}},
      {{"id", 302}, {"content", "[S]"}, {"special", true}, {"lstrip", true}, {"rstrip", true}},
  });
  const Tokenizer t = Tokenizer::from_json(j.dump());
  EXPECT_EQ(enc(t, "a<x>b"), (Ids{'a', 300, 'b'}));
  EXPECT_EQ(enc(t, "<x>y<x>"), (Ids{301, 300}));
  EXPECT_EQ(enc(t, "ab  [S]  ab"), (Ids{256, 302, 256}));  // "ab" is 256
  EXPECT_EQ(t.decode(Ids{'a', 300, 'b'}, true), "ab");
  EXPECT_EQ(t.decode(Ids{301, 300}, true), "<x>y");  // not special: kept
}

TEST(Tokenizer, StreamingNeverSplitsACharacter) {
  // Only byte tokens: every emoji arrives as four separate tokens.
  const Tokenizer t = Tokenizer::from_json(small_gpt2({}).dump());
  const std::string text = "hi 😀 日本\xC3\xA9!";
  const Ids ids = t.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  kiln::StreamDecoder s(t);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = s.push(id);
    EXPECT_EQ(kiln::tok::valid_utf8_prefix(piece), piece.size());
    all += piece;
  }
  all += s.flush();
  EXPECT_EQ(all, text);
  // Invalid bytes come out as U+FFFD at the same places decode() puts them.
  const Ids bad = {0xF0, 0x9F, 'a', 0xFF, 0xE6, 0x97};
  kiln::StreamDecoder s2(t);
  std::string got;
  for (int32_t id : bad) got += s2.push(id);
  EXPECT_EQ(s2.pending_bytes(), 2u);
  got += s2.flush();
  EXPECT_EQ(got, t.decode(bad));
}

TEST(Tokenizer, FromGgufPartsMatchesTokenizerJson) {
  // The Qwen3 vocabulary and merges as a GGUF stores them.
  const json j = json::parse(slurp(KILN_QWEN3_TOKENIZER));
  kiln::TokenizerParts p;
  p.pre = "qwen2";
  p.tokens.resize(151669);
  p.token_types.assign(151669, int32_t(kiln::TokenType::normal));
  for (const auto& [k, v] : j["model"]["vocab"].items()) p.tokens[v.get<size_t>()] = k;
  for (const auto& a : j["added_tokens"]) {
    p.tokens[a["id"].get<size_t>()] = a["content"];
    p.token_types[a["id"].get<size_t>()] =
        int32_t(a["special"].get<bool>() ? kiln::TokenType::control : kiln::TokenType::user_defined);
  }
  for (const auto& m : j["model"]["merges"]) p.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  p.eos_id = 151645;
  p.bos_id = 151643;
  p.add_bos = true;
  const Tokenizer g = Tokenizer::from_parts(p);
  for (const auto& c : golden()) EXPECT_EQ(g.encode(c["text"].get<std::string>()), c["ids"].get<Ids>());
  EXPECT_EQ(g.encode("hi", true).front(), 151643);
  EXPECT_TRUE(g.is_special(151644));
  EXPECT_FALSE(g.is_special(151657));  // <tool_call> is not special
  p.pre = "no-such-pre";
  EXPECT_THROW(Tokenizer::from_parts(p), kiln::NotImplementedError);
}

TEST(Tokenizer, RefusesBadInput) {
  EXPECT_THROW(Tokenizer::from_json("{"), kiln::ValueError);
  EXPECT_THROW(Tokenizer::from_json("[]"), kiln::ValueError);
  EXPECT_THROW(Tokenizer::from_json(R"({"model": {}})"), kiln::ValueError);
  EXPECT_THROW(Tokenizer::from_file("/nonexistent/tokenizer.json"), kiln::ValueError);
  json j = small_gpt2({"a b"});
  j["model"]["merges"] = {"a zz"};
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::ValueError);
  j = small_gpt2({"a b"});
  j["model"]["merges"] = {"ab"};
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::ValueError);
  j = small_gpt2({"a b"});
  j["model"]["type"] = "Unigram";
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::NotImplementedError);
  j = small_gpt2({"a b"});
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::ValueError);
  j = small_gpt2({"a b"});
  j["model"]["vocab"]["x"] = 1 << 30;  // must not allocate a billion slots
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::ValueError);
  j = small_gpt2({"a b"});
  j["model"]["vocab"]["x"] = "not an int";
  EXPECT_THROW(Tokenizer::from_json(j.dump()), kiln::ValueError);
  const Tokenizer t = Tokenizer::from_json(small_gpt2({}).dump());
  EXPECT_THROW(t.encode("bad \xFF utf8"), kiln::ValueError);
  EXPECT_EQ(t.decode(Ids{-5, 1 << 30, 'a'}), "a");  // unknown ids are skipped, as HF does
}

// The NFC fast path (skip utf8proc when no character can change) against
// utf8proc itself: every code point alone, and every canonical decomposition
// of length >= 2 (the only sequences NFC composes) must be seen as changing.
TEST(Tokenizer, NfcFastPathIsExact) {
  using kiln::tok::Normalization;
  int composites = 0;
  for (uint32_t cp = 0x80; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    std::string s;
    kiln::tok::append_utf8(s, cp);
    std::string out;
    const bool changed = kiln::tok::normalize(Normalization::nfc, s, out);
    // the slow path's answer for the same text
    const std::string full = kiln::tok::normalize(Normalization::nfd, s);
    const bool decomposes = full != s;
    if (!changed) {
      ASSERT_TRUE(!decomposes || kiln::tok::normalize(Normalization::nfc, full) == s) << std::hex << cp;
    }
    if (decomposes && kiln::tok::normalize(Normalization::nfc, full) == s && full.size() > 0) {
      // full is a canonical decomposition that NFC composes back to cp
      std::string out2;
      ASSERT_TRUE(kiln::tok::normalize(Normalization::nfc, full, out2)) << "U+" << std::hex << cp;
      ASSERT_EQ(out2, s);
      ++composites;
    }
  }
  EXPECT_GT(composites, 10000);  // Hangul syllables alone are 11172
}

namespace {
std::pair<int, std::string> run_cli(const std::string& args) {
  const std::string cmd = std::string("'") + KILN_CLI_PATH + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
}  // namespace

TEST(Tokenizer, Cli) {
  const std::string tok = std::string("--tokenizer '") + KILN_QWEN3_TOKENIZER + "' ";
  auto [rc, out] = run_cli("tokenize --ids-only " + tok + "'Hello, world!'");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, "9707 11 1879 0\n");
  std::tie(rc, out) = run_cli("tokenize " + tok + "' world'");
  EXPECT_EQ(out, "1879\tĠworld\n");
  std::tie(rc, out) = run_cli("tokenize --json " + tok + "- < /dev/null");
  EXPECT_EQ(json::parse(out)["ids"].size(), 0u);
  std::tie(rc, out) = run_cli("tokenize --tokenizer /nonexistent/tokenizer.json hi");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("tokenizer /nonexistent/tokenizer.json not found (No such file or directory)"),
            std::string::npos) << out;
  std::tie(rc, out) = run_cli("bench tokenizer --quick --json " + tok + " 2>/dev/null");
  ASSERT_EQ(rc, 0) << out;
  const json j = json::parse(out);
  std::set<std::string> names;
  for (const auto& r : j["results"]) {
    names.insert(r["name"]);
    EXPECT_LE(r["min_s"].get<double>(), r["max_s"].get<double>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"load", "encode_first_pass", "encode", "decode"}));
  EXPECT_EQ(j["vocab_size"], 151669);
}
