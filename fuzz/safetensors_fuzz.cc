// libFuzzer target: the safetensors header parser on arbitrary bytes. Any
// input must either parse (and then every tensor range lies inside the input)
// or throw kiln::Error; ASan/UBSan catch everything else.
#include <cstdint>
#include <cstdlib>

#include "kiln/error.h"
#include "kiln/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = kiln::io::parse_safetensors_header(data, size, "fuzz");
    uint64_t sum = 0;
    for (const auto& e : h.tensors) {
      if (e.begin > e.end || e.end > size) std::abort();  // the parser promised otherwise
      for (uint64_t i = e.begin; i < e.end; i += 61) sum += data[i];
    }
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const kiln::Error&) {
  }
  return 0;
}
