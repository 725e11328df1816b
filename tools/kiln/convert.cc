// `kiln convert [MODEL] OUT_DIR [--dtype fp8|bf16|f32]`: a kiln-ready
// safetensors directory (model.safetensors with the weights as kiln holds them,
// config.json, tokenizer) that later loads by mmap with no conversion.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli_io.h"
#include "commands.h"
#include "convert_files.h"
#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/safetensors.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct ConvertFlags {
  ModelFlags model;
  std::vector<std::string> positional;  // [MODEL] OUT_DIR
  std::string out;
  bool force = false;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const char* torch_dtype_name(DType d) {
  switch (d) {
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float16:
      return "float16";
    default:
      return "float32";
  }
}

void write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  write_file(tmp, text);  // OutputError with the reason (a full disk) when it fails
  fs::rename(tmp, path);
}

// Writes the converted model into `dir` (an empty directory); returns what it wrote, for the last line.
std::string write_converted(const std::string& src, const llm::Model& model, const std::string& dir,
                            bool quiet);

// A path that holds a model already: a GGUF file, or a directory with a config or weights.
bool holds_a_model(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return fs::exists(fs::path(path) / "config.json", ec) ||
           fs::exists(fs::path(path) / "model.safetensors", ec);
  char magic[4] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

int run_convert(ConvertFlags& c) {
  if (c.positional.empty()) throw UsageError("no OUT_DIR: expected [MODEL] OUT_DIR");
  if (c.positional.size() > 2) throw UsageError("too many arguments: expected [MODEL] OUT_DIR");
  if (c.model.dtype == "native")
    throw UsageError("--dtype native: safetensors hold no ggml blocks; convert to fp8, bf16 or f32");
  if (c.positional.size() == 2) {
    c.model.model = c.positional[0];
    c.out = c.positional[1];
  } else {
    // One argument is OUT_DIR (the default model is converted); a model there
    // is a forgotten OUT_DIR, never something to replace.
    c.out = c.positional[0];
    if (holds_a_model(c.out))
      throw UsageError(c.out + " holds a model: give OUT_DIR too, kiln convert " + c.out + " OUT_DIR");
  }
  const std::string src = resolve_model_path(c.model.model, c.model.quiet);
  std::error_code ec;
  // An absolute, normal path ("out/", "." and "a/../out" name their directory).
  std::string out = fs::absolute(c.out).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (fs::exists(out)) {
    if (!fs::is_directory(out)) throw ValueError("OUT_DIR " + out + " exists and is not a directory");
    // The source must survive: OUT_DIR is neither it nor a directory above it.
    const std::string real_out = fs::canonical(out).string(), real_src = fs::canonical(src).string();
    if (real_src == real_out || real_src.rfind(real_out + "/", 0) == 0)
      throw ValueError("OUT_DIR must not be the source model's directory or one that holds it");
    if (!fs::is_empty(out) && !c.force)
      throw ValueError("OUT_DIR " + out + " is not empty (pass --force to replace it)");
  }
  auto model = load_model(c.model);
  // Everything is written into a sibling directory first and renamed into
  // place at the end: an interrupted or failed convert never leaves OUT_DIR
  // half-written, nor mixes new files with an older model's.
  const std::string tmp = out + ".kiln-partial";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw ValueError("cannot create " + tmp + ": " + ec.message());
  std::string summary;
  try {
    // An adapter directory's config and tokenizer are its base model's.
    const std::string base = llm::lora_adapter_base(src);
    summary = write_converted(base.empty() ? src : base, *model, tmp, c.model.quiet);
    if (fs::exists(out)) fs::remove_all(out);
    fs::rename(tmp, out);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (!c.model.quiet) std::fprintf(stderr, "wrote %s: %s\n", out.c_str(), summary.c_str());
  return 0;
}

std::string write_converted(const std::string& src, const llm::Model& model, const std::string& dir,
                            bool quiet) {
  // Weights, streamed tensor by tensor into the file.
  auto weights = model.named_weights();
  const bool src_is_gguf = !fs::is_directory(src);
  if (src_is_gguf) {
    // llama.cpp's precomputed Llama 3 rope scaling: the GGUF metadata does not
    // say it otherwise, and kiln reads the same tensor from safetensors.
    const auto gguf = io::GGUFFile::open(src);
    bool listed = false;
    for (const auto& [n, t] : weights) listed |= n == "rope_freqs.weight";
    if (!listed && gguf.find_tensor("rope_freqs.weight") != nullptr)
      weights.emplace_back("rope_freqs.weight", gguf.dequantize("rope_freqs.weight").contiguous());
  }
  std::set<std::string> names;
  for (const auto& [n, t] : weights) names.insert(n);
  if (!quiet) std::fprintf(stderr, "writing model.safetensors (%zu tensors)\n", weights.size());
  io::save_safetensors(dir + "/model.safetensors", weights, {{"format", "pt"}});

  // config.json: the source's own when it has one, else rebuilt from the GGUF metadata.
  const bool src_is_dir = fs::is_directory(src);
  ojson cfg;
  if (src_is_dir && fs::exists(src + "/config.json")) {
    std::ifstream f(src + "/config.json");
    cfg = ojson::parse(f);
  } else {
    cfg = hf_config_from_model_config(model.config());
  }
  cfg.erase("quantization_config");
  DType embed_dtype = DType::BFloat16;
  for (const auto& [n, t] : weights)
    if (ends_with(n, "embed_tokens.weight")) embed_dtype = t.dtype();
  cfg["torch_dtype"] = torch_dtype_name(embed_dtype);
  cfg.erase("dtype");
  if (model.weight_format() == llm::WeightFormat::FP8) {
    // Linear modules whose weight kiln keeps unquantized (no scale): the output
    // head and MoE routers. Embeddings are not Linear modules.
    std::vector<std::string> ignore;
    bool block = false, tensorwise = true, any_scale = false;
    for (const auto& [n, t] : weights) {
      if (ends_with(n, ".weight_scale_inv")) block = true;
      if (ends_with(n, ".weight_scale")) {
        any_scale = true;
        tensorwise = tensorwise && t.numel() == 1;
      }
      if (t.dim() != 2 || !ends_with(n, ".weight") || ends_with(n, "embed_tokens.weight")) continue;
      const std::string module = n.substr(0, n.size() - 7);
      if (!names.count(module + ".weight_scale") && !names.count(module + ".weight_scale_inv"))
        ignore.push_back(module);
    }
    if (!names.count("lm_head.weight")) ignore.push_back("lm_head");
    const auto& q = model.config().quant;
    if (block) {
      cfg["quantization_config"] = fp8_block_quantization_config(ignore, q.block_n > 0 ? q.block_n : 128,
                                                                 q.block_k > 0 ? q.block_k : 128);
    } else {
      cfg["quantization_config"] =
          fp8_channel_quantization_config(ignore, any_scale && tensorwise ? "tensor" : "channel");
    }
  }
  write_text(dir + "/config.json", cfg.dump(2) + "\n");

  // Tokenizer: the source's files as they are, or the GGUF's as tokenizer.json.
  std::string tokenizer_note;
  if (src_is_dir) {
    for (const char* name :
         {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json"}) {
      if (fs::exists(src + "/" + name)) {
        fs::copy_file(src + "/" + name, dir + "/" + name, fs::copy_options::overwrite_existing);
        tokenizer_note += std::string(tokenizer_note.empty() ? "" : ", ") + name;
      }
    }
  } else {
    const auto gguf = io::GGUFFile::open(src);
    if (gguf.get_string_array("tokenizer.ggml.tokens") != nullptr) {
      const auto files = tokenizer_files_from_gguf(gguf);
      write_text(dir + "/tokenizer.json", files.tokenizer_json);
      write_text(dir + "/tokenizer_config.json", files.tokenizer_config_json);
      tokenizer_note = "tokenizer.json, tokenizer_config.json (from the GGUF's tokenizer)";
    } else {
      tokenizer_note = "no tokenizer (the GGUF has none)";
    }
  }
  char summary[512];
  std::snprintf(summary, sizeof summary, "model.safetensors (%.1f MB %s), config.json%s%s",
                double(fs::file_size(dir + "/model.safetensors")) / 1e6,
                llm::weight_format_name(model.weight_format()), tokenizer_note.empty() ? "" : ", ",
                tokenizer_note.c_str());
  return summary;
}

}  // namespace

Command add_convert(CLI::App& parent) {
  auto c = std::make_shared<ConvertFlags>();
  CLI::App* app = parent.add_subcommand("convert", "Write a kiln-ready safetensors model directory.");
  app->footer(
      "OUT_DIR gets model.safetensors (the weights as kiln holds them at --dtype: fp8 linear weights as "
      "float8_e4m3fn with a float32 per-row weight_scale [N, 1], norms and embeddings in bf16/f32), "
      "config.json "
      "(the source's, or one rebuilt from GGUF metadata; with a compressed-tensors float8 'channel' "
      "quantization_config for fp8, so it loads back by mmap with no conversion) and the tokenizer: the "
      "source's tokenizer files, or for a GGUF source its embedded tokenizer written as a Hugging Face "
      "tokenizer.json + tokenizer_config.json (chat template included), which kiln and the `tokenizers` "
      "library both read. With one argument, it is OUT_DIR and the default model is converted; with "
      "two, MODEL OUT_DIR. " +
      std::string(kModelConvention));
  app->add_option("args", c->positional,
                  "[MODEL] OUT_DIR: the source (default: the default model) and the directory to write "
                  "(created if missing; must be empty without --force)");
  app->add_flag("--force", c->force, "Replace OUT_DIR and everything in it when it is not empty");
  add_model_flags(*app, c->model);
  return {app, [c] { return run_convert(*c); }};
}

}  // namespace kiln::cli
