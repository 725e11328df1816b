// libFuzzer target: the GGUF parser, then dequantization of every tensor it
// accepted (bounded), reading exactly the byte ranges the parser validated.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kiln/error.h"
#include "kiln/io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = kiln::io::parse_gguf(data, size, "fuzz");
    std::vector<float> out;
    for (const auto& t : h.tensors) {
      if (t.offset > size || t.nbytes > size - t.offset) std::abort();  // the parser promised otherwise
      const auto* info = kiln::io::ggml_type_info(uint32_t(t.type));
      if (!info->dequantizable || t.numel > (1 << 20)) continue;
      out.resize(size_t(t.numel));
      try {
        kiln::io::dequantize_row(t.type, data + t.offset, out.data(), t.numel);
      } catch (const kiln::Error&) {
      }
    }
    for (const auto& [k, v] : h.metadata) (void)v.to_string();
  } catch (const kiln::Error&) {
  }
  return 0;
}
