// libFuzzer target: response_format's JSON Schema compiler and the byte-level
// matcher (src/serve/json_constraint). Input: a schema's JSON text, a NUL byte,
// then a document. Whatever the matcher takes as a whole value must parse as
// JSON (numbers past double's range aside); anything else aborts.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "serve/json_constraint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  if (nul == std::string::npos) return 0;
  nlohmann::json schema = nlohmann::json::parse(in.substr(0, nul), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  std::shared_ptr<const kiln::serve::JsonSchema> s;
  try {
    s = kiln::serve::JsonSchema::compile(schema);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string doc = in.substr(nul + 1);
  kiln::serve::JsonMatcher m(*s);
  for (size_t i = 0; i < doc.size(); ++i) {
    kiln::serve::JsonMatcher copy = m;  // copies are what sampling tests tokens on
    if (!m.advance(std::string_view(doc).substr(i, 1))) return 0;
  }
  if (!m.can_end()) return 0;
  try {
    (void)nlohmann::json::parse(doc);
  } catch (const nlohmann::json::out_of_range& e) {
    if (e.id != 406) std::abort();
  } catch (const nlohmann::json::exception&) {
    std::abort();  // the matcher took text that is not JSON
  }
  return 0;
}
