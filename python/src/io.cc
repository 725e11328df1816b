// kiln.io: safetensors load/save (zero-copy views of the mapped file), GGUF
// reading (kiln.io.GGUFFile), model configs (kiln.io.load_config).
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string_view.h>

#include <cstring>
#include <fstream>

#include "bind_util.h"
#include "config_dict.h"
#include "kiln/io/gguf.h"
#include "kiln/io/gguf_names.h"
#include "kiln/io/gguf_quantize.h"
#include "kiln/io/model_config.h"
#include "kiln/io/safetensors.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kiln;
using namespace kiln::io;

namespace {

std::vector<std::pair<std::string, Tensor>> tensors_from_dict(const nb::dict& d) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto [k, v] : d) {
    if (!nb::isinstance<nb::str>(k)) throw TypeError("[io.save_file] tensor names must be str");
    out.emplace_back(std::string(py::utf8(k, "io.save_file", "tensor name")), py::to_tensor(v));
  }
  return out;
}

Metadata metadata_from(const nb::handle& m) {
  Metadata out;
  if (m.is_none()) return out;
  if (!nb::isinstance<nb::dict>(m)) throw TypeError("[io.save_file] metadata must be a dict of str to str");
  for (auto [k, v] : nb::borrow<nb::dict>(m)) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::str>(v))
      throw TypeError("[io.save_file] metadata must be a dict of str to str");
    out.emplace_back(std::string(py::utf8(k, "io.save_file", "metadata key")),
                     std::string(py::utf8(v, "io.save_file", "metadata value")));
  }
  return out;
}

nb::dict file_dict(const SafetensorsFile& f) {
  nb::dict d;
  std::vector<const SafetensorsEntry*> es;
  for (const auto& e : f.tensors()) es.push_back(&e);
  std::sort(es.begin(), es.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (auto* e : es) d[e->name.c_str()] = nb::cast(f.tensor(*e));
  return d;
}

nb::object value_to_python(const GGUFValue& v) {
  if (v.is_array()) {
    nb::list l;
    if (v.elem_type == GGUFType::String)
      for (const auto& s : v.strings) l.append(nb::str(s.data(), s.size()));
    else if (v.elem_type == GGUFType::Float32 || v.elem_type == GGUFType::Float64)
      for (double x : v.floats) l.append(x);
    else if (v.elem_type == GGUFType::Bool)
      for (int64_t x : v.ints) l.append(nb::bool_(x != 0));
    else
      for (int64_t x : v.ints) l.append(x);
    return l;
  }
  switch (v.type) {
    case GGUFType::String:
      return nb::str(v.s.data(), v.s.size());
    case GGUFType::Bool:
      return nb::bool_(v.b);
    case GGUFType::Float32:
    case GGUFType::Float64:
      return nb::float_(v.f);
    case GGUFType::UInt64:
      return nb::int_(v.u);
    default:
      return nb::int_(v.i);
  }
}

nb::dict tensor_info_dict(const GGUFTensorInfo& t) {
  nb::dict d;
  d["name"] = t.name;
  d["type"] = ggml_type_info(uint32_t(t.type))->name;
  d["shape"] = nb::tuple(nb::cast(t.shape));
  d["ne"] = nb::tuple(nb::cast(t.ne));
  d["offset"] = t.offset;
  d["nbytes"] = t.nbytes;
  return d;
}

}  // namespace

// Declared in config_dict.h: kiln.io.load_config's dict, also LanguageModel.config.
nb::dict config_dict(const kiln::io::ModelConfig& c) {
  nb::dict d;
  d["architecture"] = c.architecture;
  d["vocab_size"] = c.vocab_size;
  d["hidden_size"] = c.hidden_size;
  d["intermediate_size"] = c.intermediate_size;
  d["num_hidden_layers"] = c.num_hidden_layers;
  d["num_attention_heads"] = c.num_attention_heads;
  d["num_key_value_heads"] = c.num_key_value_heads;
  d["head_dim"] = c.head_dim;
  d["max_position_embeddings"] = c.max_position_embeddings;
  d["rms_norm_eps"] = c.rms_norm_eps;
  d["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type.empty()) {
    d["rope_scaling"] = nb::none();
  } else {
    nb::dict r;
    r["type"] = c.rope_scaling.type;
    r["factor"] = c.rope_scaling.factor;
    r["low_freq_factor"] = c.rope_scaling.low_freq_factor;
    r["high_freq_factor"] = c.rope_scaling.high_freq_factor;
    r["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    r["beta_fast"] = c.rope_scaling.beta_fast;
    r["beta_slow"] = c.rope_scaling.beta_slow;
    d["rope_scaling"] = r;
  }
  d["tie_word_embeddings"] = c.tie_word_embeddings;
  d["attention_bias"] = c.attention_bias;
  d["qk_norm"] = c.qk_norm;
  d["hidden_act"] = c.hidden_act;
  d["sliding_window"] = c.sliding_window ? nb::cast(*c.sliding_window) : nb::none();
  d["torch_dtype"] = c.torch_dtype;
  d["bos_token_id"] = c.bos_token_id ? nb::cast(*c.bos_token_id) : nb::none();
  d["eos_token_ids"] = nb::cast(c.eos_token_ids);
  d["num_experts"] = c.num_experts;
  d["num_experts_per_tok"] = c.num_experts_per_tok;
  d["moe_intermediate_size"] = c.moe_intermediate_size;
  d["norm_topk_prob"] = c.norm_topk_prob;
  d["decoder_sparse_step"] = c.decoder_sparse_step;
  d["mlp_only_layers"] = nb::cast(c.mlp_only_layers);
  nb::dict q;
  q["scheme"] = quant_scheme_name(c.quant.scheme);
  q["method"] = c.quant.method;
  q["fmt"] = c.quant.fmt;
  q["activation_scheme"] = c.quant.activation_scheme;
  q["dynamic_activations"] = c.quant.dynamic_activations;
  q["block_size"] = c.quant.scheme == QuantScheme::Fp8Block
                        ? nb::object(nb::make_tuple(c.quant.block_n, c.quant.block_k))
                        : nb::none();
  q["scale_name"] = c.quant.scale_name;
  q["ignore"] = nb::cast(c.quant.ignore);
  d["quantization"] = q;
  d["parameter_count"] = c.parameter_count();
  return d;
}

namespace {

bool looks_like_gguf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

// A GGUF metadata key or tensor name argument.
std::string key_arg(nb::handle h, const char* what) { return std::string(py::utf8(h, "gguf", what)); }

}  // namespace

void init_io(nb::module_& m) {
  m.def(
      "io_load_file",
      [](nb::handle path) {
        auto ck = SafetensorsCheckpoint::open(py::to_path(path, "io.load_file"));
        nb::dict d;
        for (const auto& n : ck.names()) d[n.c_str()] = nb::cast(ck.tensor(n));
        return d;
      },
      "path"_a,
      "Loads a safetensors file (or a sharded checkpoint: an index.json or a directory) as a dict\n"
      "name -> Tensor. Tensors are zero-copy views of the memory-mapped file (copy-on-write).");
  m.def(
      "io_load_metadata",
      [](nb::handle path) {
        nb::dict d;
        const auto ck = SafetensorsCheckpoint::open(
            py::to_path(path, "io.load_metadata"));  // named: metadata() refers into it
        for (const auto& [k, v] : ck.metadata()) d[k.c_str()] = v;
        return d;
      },
      "path"_a, "The __metadata__ of a safetensors file (or the index's metadata).");
  m.def(
      "io_save_file",
      [](const nb::dict& tensors, nb::handle path, nb::handle metadata) {
        save_safetensors(py::to_path(path, "io.save_file"), tensors_from_dict(tensors),
                         metadata_from(metadata));
      },
      "tensors"_a, "filename"_a, "metadata"_a = nb::none(),
      "Writes a dict name -> Tensor (or NumPy array) as a safetensors file.");
  m.def(
      "io_save",
      [](const nb::dict& tensors, nb::handle metadata) {
        const std::string s = serialize_safetensors(tensors_from_dict(tensors), metadata_from(metadata));
        return nb::bytes(s.data(), s.size());
      },
      "tensors"_a, "metadata"_a = nb::none(), "A dict name -> Tensor serialized as safetensors bytes.");
  m.def(
      "io_load",
      [](nb::bytes data) {
        auto file = MappedFile::from_bytes(std::string(data.c_str(), data.size()), "<bytes>");
        return file_dict(SafetensorsFile::from_file(file));
      },
      "data"_a, "Parses safetensors bytes into a dict name -> Tensor.");

  nb::class_<GGUFFile> g(m, "GGUFFile", "A GGUF file (v2/v3), memory-mapped: metadata and tensors.");
  g.def(
       "__init__",
       [](GGUFFile* self, nb::handle path) {
         new (self) GGUFFile(GGUFFile::open(py::to_path(path, "gguf")));
       },
       "path"_a)
      .def_prop_ro("version", &GGUFFile::version)
      .def_prop_ro("alignment", &GGUFFile::alignment)
      .def_prop_ro("architecture", &GGUFFile::architecture)
      .def_prop_ro("path",
                   [](const GGUFFile& f) {
                     // Decoded as os.fsdecode does, so that a non-UTF-8 name round-trips.
                     const std::string& p = f.file()->path();
                     PyObject* s = PyUnicode_DecodeFSDefaultAndSize(p.data(), Py_ssize_t(p.size()));
                     if (s == nullptr) throw nb::python_error();
                     return nb::steal<nb::str>(s);
                   })
      .def_prop_ro(
          "metadata",
          [](const GGUFFile& f) {
            nb::dict d;
            for (const auto& [k, v] : f.metadata()) d[k.c_str()] = value_to_python(v);
            return d;
          },
          "All metadata as a dict (arrays as lists).")
      .def(
          "get",
          [](const GGUFFile& f, nb::handle key, nb::object dflt) {
            const GGUFValue* v = f.find(key_arg(key, "key"));
            return v ? value_to_python(*v) : dflt;
          },
          "key"_a, "default"_a = nb::none())
      .def(
          "value_type",
          [](const GGUFFile& f, nb::handle key_h) {
            const std::string key = key_arg(key_h, "key");
            const GGUFValue* v = f.find(key);
            if (!v) throw IndexError("[gguf] no metadata key '" + key + "'");
            return std::string(gguf_type_name(v->type)) +
                   (v->is_array() ? std::string("[") + gguf_type_name(v->elem_type) + "]" : "");
          },
          "key"_a, "The GGUF value type of a key: 'uint32', 'string', 'array[string]', ...")
      .def_prop_ro("tensor_names",
                   [](const GGUFFile& f) {
                     std::vector<std::string> n;
                     for (const auto& t : f.tensors()) n.push_back(t.name);
                     return n;
                   })
      .def_prop_ro(
          "tensors",
          [](const GGUFFile& f) {
            nb::list l;
            for (const auto& t : f.tensors()) l.append(tensor_info_dict(t));
            return l;
          },
          "Tensor infos: dicts of name, type, shape (PyTorch order), ne (ggml order), offset, nbytes.")
      .def(
          "tensor_info",
          [](const GGUFFile& f, nb::handle n) {
            return tensor_info_dict(f.tensor_info(key_arg(n, "tensor name")));
          },
          "name"_a)
      .def(
          "tensor", [](const GGUFFile& f, nb::handle n) { return f.tensor(key_arg(n, "tensor name")); },
          "name"_a, "Zero-copy view of an F32/F16/BF16/F64/integer tensor.")
      .def(
          "raw", [](const GGUFFile& f, nb::handle n) { return f.raw(key_arg(n, "tensor name")); }, "name"_a,
          "The stored bytes (uint8, last dim = bytes per row), zero-copy.")
      .def(
          "dequantize",
          [](const GGUFFile& f, nb::handle n, DType d) { return f.dequantize(key_arg(n, "tensor name"), d); },
          "name"_a, "dtype"_a = DType::Float32,
          "The tensor as floats, rows in file order. Block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to "
          "Q6_K, Q8_K, IQ4_NL, IQ4_XS) are dequantized bit for bit as gguf.quants.dequantize does; NaN/inf "
          "block scales give NaN/inf values as there. Other types raise NotImplementedError.")
      .def(
          "load_hf",
          [](const GGUFFile& f, nb::handle n, DType d) { return f.load_hf(key_arg(n, "tensor name"), d); },
          "name"_a, "dtype"_a = DType::Float32,
          "dequantize() with llama's Q/K rows restored to Hugging Face order.")
      .def(
          "hf_name",
          [](const GGUFFile& f, nb::handle name) {
            const std::string n = key_arg(name, "tensor name");
            std::string arch = f.architecture();
            if (arch == "qwen3moe") arch = "qwen3_moe";
            if (arch == "llama" && f.get_int("llama.expert_count").value_or(0) > 0) arch = "mixtral";
            const std::string hf = gguf_to_hf_name(n, arch);
            return hf.empty() ? nb::object(nb::none()) : nb::object(nb::str(hf.c_str()));
          },
          "name"_a, "The Hugging Face name of a tensor (None when it has none).")
      .def("__contains__",
           [](const GGUFFile& f, nb::handle n) {
             return nb::isinstance<nb::str>(n) && f.find_tensor(key_arg(n, "tensor name")) != nullptr;
           })
      .def("__len__", [](const GGUFFile& f) { return f.tensors().size(); });
  m.attr("io_GGUFFile") = g;
  nb::delattr(m, "GGUFFile");

  m.def(
      "io_load_config",
      [](nb::handle path_arg) {
        const std::string path = py::to_path(path_arg, "config");
        if (looks_like_gguf(path)) return config_dict(config_from_gguf(GGUFFile::open(path)));
        return config_dict(load_hf_config(path));
      },
      "path"_a,
      "A model's configuration as a dict: from config.json (a file or a model directory) or a GGUF file.");
  m.def(
      "io_parse_config",
      [](nb::handle text) {
        return config_dict(parse_hf_config(std::string(py::utf8(text, "config", "text"))));
      },
      "text"_a, "Parses the text of a Hugging Face config.json.");
  m.def(
      "io_quantize_gguf",
      [](nb::handle src_arg, nb::handle out_arg, const std::string& type, bool allow_requantize) {
        const std::string src = py::to_path(src_arg, "src"), out = py::to_path(out_arg, "out");
        QuantizeOptions o;
        o.recipe = type;
        o.allow_requantize = allow_requantize;
        QuantizeSummary s;
        {
          nb::gil_scoped_release nogil;
          s = quantize_gguf(src, out, o);
        }
        nb::dict d;
        d["in_bytes"] = s.in_bytes;
        d["out_bytes"] = s.out_bytes;
        d["file_bytes"] = s.file_bytes;
        d["weights"] = s.weights;
        d["quantized"] = s.quantized;
        d["copied"] = s.copied;
        return d;
      },
      "src"_a, "out"_a, "type"_a = "Q4_K_M", "allow_requantize"_a = false,
      "Writes `out`, the GGUF `src` with its weight matrices re-encoded per `type` (a recipe such as "
      "Q4_K_M or Q8_0; see `kiln quantize --help`). Returns byte and tensor counts as a dict.");
}
