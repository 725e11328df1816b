// safetensors: the Hugging Face tensor file format.
//   [u64 little-endian N][N bytes of JSON header][data section]
// The header maps each tensor name to {dtype, shape, data_offsets: [begin, end)}
// (offsets relative to the data section), plus an optional "__metadata__"
// string->string map. Files are memory-mapped and tensors are zero-copy views.
// Every header is validated before any byte of the data section is touched:
// header length inside the file, well-formed UTF-8 JSON, no duplicate keys,
// known dtypes, shape x itemsize == byte range, ranges inside the data section,
// neither overlapping nor leaving holes (as the reference implementation).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/io/mapped_file.h"
#include "kiln/tensor.h"

namespace kiln::io {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  uint64_t begin = 0;  // absolute byte offsets in the file
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t header_len = 0;
  uint64_t data_start = 0;                // 8 + header_len
  std::vector<SafetensorsEntry> tensors;  // in header order
  Metadata metadata;                      // "__metadata__"
};

// The kiln dtype of a safetensors dtype name ("BF16", "F8_E4M3", ...), or nullopt.
std::optional<DType> safetensors_dtype(std::string_view name);
// The safetensors name of a dtype ("F32", ...).
const char* safetensors_dtype_name(DType d);

// Parses and validates the header of a safetensors image of `size` bytes.
// Throws ValueError "[safetensors] <what> in <name>" on anything malformed.
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size,
                                           const std::string& name = "<memory>");

class SafetensorsFile {
 public:
  // Maps and validates a .safetensors file.
  static SafetensorsFile open(const std::string& path);
  static SafetensorsFile from_file(std::shared_ptr<MappedFile> file);

  const std::vector<SafetensorsEntry>& tensors() const { return header_.tensors; }
  const Metadata& metadata() const { return header_.metadata; }
  const SafetensorsHeader& header() const { return header_; }
  const std::shared_ptr<MappedFile>& file() const { return file_; }
  const SafetensorsEntry* find(std::string_view name) const;
  // A zero-copy view of the named tensor (a copy when the file places it at an
  // address not aligned to its itemsize). Throws IndexError for an unknown name.
  Tensor tensor(std::string_view name) const;
  Tensor tensor(const SafetensorsEntry& e) const;

 private:
  std::shared_ptr<MappedFile> file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

// Serializes tensors (in any layout; written contiguous) as a safetensors image.
// Names must be unique and not "__metadata__". Tensors are laid out largest
// itemsize first, then by name, so that every tensor is aligned to its itemsize.
std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const Metadata& metadata = {});
// serialize_safetensors written to `path` (via a temporary file renamed into place).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const Metadata& metadata = {});

// A checkpoint that may be split over shards: a .safetensors file, a
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}), or a
// directory holding either. Shards are opened (mapped + validated) up front.
class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::string& path);

  std::vector<std::string> names() const;  // sorted
  bool contains(std::string_view name) const { return where_.count(std::string(name)) != 0; }
  const SafetensorsEntry& entry(std::string_view name) const;
  Tensor tensor(std::string_view name) const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  const Metadata& metadata() const { return metadata_; }  // the index's "metadata" (or the file's)

 private:
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, size_t, std::less<>> where_;  // name -> shard
  Metadata metadata_;
};

}  // namespace kiln::io
