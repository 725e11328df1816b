// Writing GGUF v3 files (the layout is in kiln/io/gguf.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/io/gguf.h"

namespace kiln::io {

struct GGUFWriteTensor {
  std::string name;
  GGMLType type = GGMLType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] contiguous
};

// Bytes of a tensor of type `t` and dimensions `ne` (ValueError when ne[0] is
// not a whole number of t's blocks).
uint64_t ggml_tensor_bytes(GGMLType t, const std::vector<int64_t>& ne);

// The bytes of a GGUF file before its tensor data (header, metadata, tensor
// infos, padding to the alignment; see write_gguf), and in *data_bytes the
// size of the data section that follows (each tensor padded to the alignment).
std::string gguf_header_bytes(const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                              const std::vector<GGUFWriteTensor>& tensors, uint64_t alignment,
                              uint64_t* data_bytes = nullptr);

// Writes `path` through `path`.tmp, renamed when complete (a failure removes
// the .tmp and throws the OSError). Metadata is written in the order given,
// values as GGUFValue holds them (each array element in its elem_type); the
// tensors' data follow in order, each at a multiple of `alignment` (a
// general.alignment key, if given, must agree; one is added when the
// alignment is not the default 32). fill(i, dst) writes tensor i's
// ggml_tensor_bytes into dst; it is called once per tensor, in order, so a
// multi-GB model never sits in memory whole.
void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                const std::vector<GGUFWriteTensor>& tensors, uint64_t alignment,
                const std::function<void(size_t, uint8_t*)>& fill);

}  // namespace kiln::io
