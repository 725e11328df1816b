// Strict JSON parsing for the model-file readers (safetensors headers, index
// files, config.json): UTF-8 validated, duplicate keys refused at any depth,
// errors as ValueError "[op] invalid JSON in NAME: ...".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln::io {

using json = nlohmann::json;

json parse_json_strict(std::string_view text, const char* op, const std::string& name);

// Reads a whole (small) file into a string; ValueError "[op] cannot read PATH".
std::string read_text_file(const std::string& path, const char* op, size_t max_bytes = size_t(1) << 30);

// Typed field access with "[op] NAME: field 'key' ..." errors.
bool json_is_int(const json& v);  // an integer (not a float/bool)

}  // namespace kiln::io
