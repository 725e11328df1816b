// libFuzzer target: config.json parsing (JSON, fields, quantization configs).
#include <cstdint>
#include <string>

#include "kiln/error.h"
#include "kiln/io/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto c = kiln::io::parse_hf_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)c.summary();
    (void)c.parameter_count();
  } catch (const kiln::Error&) {
  }
  return 0;
}
