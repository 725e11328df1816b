// `kiln quantize MODEL OUT.gguf --type Q4_K_M`: a GGUF, or a Hugging Face
// checkpoint, written as a GGUF in ggml's block types, a file llama.cpp and
// kiln both run (io::quantize_gguf).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli_io.h"
#include "commands.h"
#include "kiln/error.h"
#include "kiln/io/gguf_quantize.h"
#include "kiln/thread_pool.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct QuantizeFlags {
  std::vector<std::string> positional;  // MODEL OUT
  std::string type = "Q4_K_M";
  bool allow_requantize = false;
  bool force = false;
  bool quiet = false;
  int threads = 0;
};

bool is_gguf(const std::string& path) {
  char magic[4] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
  return t + "]";
}

int run_quantize(const QuantizeFlags& c) {
  if (c.positional.size() != 2) throw UsageError("expected MODEL OUT.gguf");
  const std::string src = resolve_model_path(c.positional[0], c.quiet);
  const std::string& out = c.positional[1];
  if (!fs::is_directory(src) && !is_gguf(src))
    throw UsageError(src + " is neither a GGUF file nor a Hugging Face checkpoint directory");
  if (fs::exists(out) && !c.force) throw UsageError(out + " exists; pass --force to replace it");
  if (c.threads > 0) set_num_threads(c.threads);

  io::QuantizeOptions o;
  o.recipe = c.type;
  o.allow_requantize = c.allow_requantize;
  if (!c.quiet)
    o.progress = [](const io::QuantizeStep& s) {
      std::fprintf(stderr, "[%*zu/%zu] %-32s %-18s %5s -> %-5s %9.2f MB\n",
                   int(std::to_string(s.count).size()), s.index + 1, s.count, s.name.c_str(),
                   shape_text(s.shape).c_str(), io::ggml_type_info(uint32_t(s.from))->name,
                   io::ggml_type_info(uint32_t(s.to))->name, double(s.bytes) / 1e6);
    };
  const auto t0 = std::chrono::steady_clock::now();
  const io::QuantizeSummary sum = io::quantize_gguf(src, out, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char line[512];
  std::snprintf(line, sizeof line,
                "wrote %s: %lld tensors (%lld re-encoded, %lld copied), %.1f MB of weights at %.2f bits per "
                "weight (from %.1f MB) in %.1f s\n",
                out.c_str(), static_cast<long long>(sum.quantized + sum.copied),
                static_cast<long long>(sum.quantized), static_cast<long long>(sum.copied),
                double(sum.out_bytes) / 1e6,
                sum.weights ? 8.0 * double(sum.out_bytes) / double(sum.weights) : 0.0,
                double(sum.in_bytes) / 1e6, secs);
  write_stdout(line);
  return 0;
}

}  // namespace

Command add_quantize(CLI::App& parent) {
  auto c = std::make_shared<QuantizeFlags>();
  CLI::App* app = parent.add_subcommand("quantize", "Write a GGUF with its weights in ggml's block types.");
  app->footer(
      "Reads MODEL (a .gguf file, a Hugging Face checkpoint directory, or \"default\"), encodes its "
      "weight matrices per --type and writes OUT.gguf, which llama.cpp and kiln both load (kiln runs it as "
      "stored with --dtype native). From a GGUF, metadata and tokenizer are kept and general.file_type is "
      "set. From a checkpoint directory (llama, qwen2, qwen3, qwen3_moe, mixtral or olmoe in bf16/f16/f32 "
      "safetensors; the experts of a layer stacked as one tensor), the "
      "file is laid out as llama.cpp's convert_hf_to_gguf.py lays it out: llama.cpp's tensor names and "
      "{arch}.* keys, llama's Q/K rows interleaved, Llama 3 rope scaling as rope_freqs, and tokenizer.json "
      "(byte-level BPE) as tokenizer.ggml.* with the pre-tokenizer whose splitting matches it; without a "
      "tokenizer.json the file has no tokenizer (kiln runs it on token ids; llama.cpp refuses it). Norms, "
      "biases and the MoE router stay in float. Types: " +
      io::gguf_quantize_recipe_names() +
      ". Each tensor gets the type llama.cpp's quantizer gives it (for a dense model without an importance "
      "matrix): the output head Q6_K (under Q8_0, F16, BF16 and F32 that type); under Q4_K_M and Q5_K_M, "
      "attn_v and ffn_down Q6_K in the first and last eighth of the layers and every third layer between; "
      "under Q4_K_S, attn_v in the first 4 layers and ffn_down in the first eighth Q5_K; under Q2_K, "
      "attn_output, ffn_down and attn_v Q3_K (attn_v Q4_K when 4 or more query heads share a KV head); "
      "under Q3_K_M, attn_v Q5_K in the first 2 layers and Q4_K after, ffn_down Q5_K in the first "
      "sixteenth and Q4_K after, attn_output Q4_K; under Q3_K_L, attn_v, ffn_down and attn_output Q5_K; "
      "under IQ4_NL and IQ4_XS, ffn_down in the first eighth Q5_K (and attn_v when 4 or more query heads "
      "share a KV head). K types and IQ4_XS need rows that are whole 256-element super-blocks; other rows "
      "fall back as llama.cpp's do (Q2_K, Q3_K -> Q4_0; IQ4_XS -> IQ4_NL; Q4_K -> Q5_0; Q5_K -> Q5_1; "
      "Q6_K -> Q8_0), and rows that are not whole 32-element "
      "blocks to F16. Q4_0..Q8_0 are encoded bit for bit as gguf-py's gguf.quants.quantize (and llama.cpp's "
      "reference encoders). "
      "Best from a checkpoint or an F32/F16/BF16 GGUF: a tensor already in a block type is re-encoded only "
      "with "
      "--allow-requantize (and copied as is when it already has the target type). The file is written "
      "to OUT.gguf.tmp and renamed when whole; one line per tensor on stderr unless --quiet.");
  app->add_option("args", c->positional,
                  "MODEL OUT.gguf: the source (GGUF or checkpoint directory) and the file to write");
  app->add_option("--type,-t", c->type, "The recipe (default Q4_K_M)");
  app->add_flag("--allow-requantize", c->allow_requantize,
                "Re-encode tensors that are already block-quantized (stacks two roundings)");
  app->add_flag("--force", c->force, "Replace OUT.gguf when it exists");
  app->add_flag("--quiet,-q", c->quiet, "No per-tensor lines on stderr");
  add_threads_option(*app, c->threads);
  return {app, [c] { return run_quantize(*c); }};
}

}  // namespace kiln::cli
