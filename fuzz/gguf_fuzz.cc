// libFuzzer target: the GGUF parser, then dequantization of every tensor it
// accepted (bounded), reading exactly the byte ranges the parser validated;
// each finite tensor re-encoded in every type kiln writes and decoded back;
// and the file's header written again by kiln's writer, which must parse to
// the same metadata and tensor infos.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/gguf_quantize.h"
#include "kiln/io/gguf_writer.h"

namespace {

using namespace kiln::io;

void require(bool ok) {
  if (!ok) std::abort();
}

// Encoders on what the decoders produced: no crash, no sanitizer report.
void reencode(const std::vector<float>& x) {
  for (uint32_t k = 0; k < 64; ++k) {
    const GGMLTypeInfo* info = ggml_type_info(k);
    if (info == nullptr || !ggml_quantizable(GGMLType(k)) || x.size() % info->block_size != 0) continue;
    std::vector<uint8_t> q(x.size() / info->block_size * info->type_size);
    std::vector<float> y(x.size());
    quantize_row(GGMLType(k), x.data(), q.data(), int64_t(x.size()));
    dequantize_row(GGMLType(k), q.data(), y.data(), int64_t(y.size()));
  }
}

void round_trip_header(const GGUFHeader& h) {
  std::vector<GGUFWriteTensor> tensors;
  for (const auto& t : h.tensors) tensors.push_back({t.name, t.type, t.ne});
  uint64_t data_bytes = 0;
  std::string out = gguf_header_bytes(h.metadata, tensors, h.alignment, &data_bytes);
  if (data_bytes > (uint64_t(1) << 24)) return;
  out.resize(out.size() + data_bytes);
  const GGUFHeader g = parse_gguf(reinterpret_cast<const uint8_t*>(out.data()), out.size(), "rewritten");
  require(g.alignment == h.alignment && g.tensors.size() == h.tensors.size());
  size_t extra = g.metadata.size() - h.metadata.size();  // general.alignment, when added
  require(extra <= 1);
  for (size_t k = 0; k < h.metadata.size(); ++k) {
    const GGUFValue &a = h.metadata[k].second, &b = g.metadata[k].second;
    require(g.metadata[k].first == h.metadata[k].first && a.type == b.type && a.elem_type == b.elem_type);
    require(a.i == b.i && a.u == b.u && a.b == b.b && a.s == b.s && a.ints == b.ints &&
            a.strings == b.strings);
    require(a.floats.size() == b.floats.size() && (a.f == b.f || (std::isnan(a.f) && std::isnan(b.f))));
  }
  for (size_t k = 0; k < h.tensors.size(); ++k)
    require(g.tensors[k].name == h.tensors[k].name && g.tensors[k].type == h.tensors[k].type &&
            g.tensors[k].ne == h.tensors[k].ne);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = parse_gguf(data, size, "fuzz");
    std::vector<float> out;
    for (const auto& t : h.tensors) {
      require(t.offset <= size && t.nbytes <= size - t.offset);  // the parser promised so
      const auto* info = ggml_type_info(uint32_t(t.type));
      if (!info->dequantizable || t.numel > (1 << 20)) continue;
      out.resize(size_t(t.numel));
      try {
        dequantize_row(t.type, data + t.offset, out.data(), t.numel);
      } catch (const kiln::Error&) {
        continue;
      }
      bool finite = true;
      for (float v : out) finite = finite && std::isfinite(v);
      if (finite && t.numel <= (1 << 16)) reencode(out);
    }
    for (const auto& [k, v] : h.metadata) (void)v.to_string();
    round_trip_header(h);
  } catch (const kiln::Error&) {
  }
  return 0;
}
