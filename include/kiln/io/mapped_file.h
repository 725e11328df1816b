// A read-only view of a whole file's bytes: memory-mapped (zero-copy; pages come
// from the page cache on first touch) or held in memory (for parsers fed from a
// buffer, e.g. fuzzers). Tensors viewing the bytes keep the MappedFile alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln::io {

class MappedFile {
 public:
  // Maps `path`; throws OSError "[op] cannot open PATH: reason" carrying errno
  // (EISDIR for a directory).
  static std::shared_ptr<MappedFile> open(const std::string& path, const char* op = "io.open");
  // Holds a copy of `bytes` in memory.
  static std::shared_ptr<MappedFile> from_bytes(std::string bytes, std::string name = "<memory>");
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view view(size_t offset, size_t length) const {
    return {reinterpret_cast<const char*>(data_) + offset, length};
  }
  // Advises the kernel that [offset, offset + length) will be read soon.
  void will_need(size_t offset, size_t length) const;
  // Advises the kernel that the whole pages inside [offset, offset + length)
  // are no longer needed (they are re-read from the file if touched again).
  // A no-op for in-memory bytes. Never call it on a range a caller has written.
  void dont_need(size_t offset, size_t length) const;

  // A tensor viewing bytes [offset, offset + numel*itemsize) of the file without
  // copying, keeping this file alive. The caller has checked the range. A range
  // whose address is not aligned to the itemsize is copied instead (kernels read
  // elements as T*). The pages are mapped copy-on-write: writing to the tensor
  // changes this process's copy only, never the file.
  Tensor tensor_view(size_t offset, DType dtype, const Shape& shape) const;

 private:
  MappedFile() = default;
  std::shared_ptr<const MappedFile> self() const;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string path_;
  std::string owned_;  // from_bytes storage
  std::weak_ptr<const MappedFile> weak_self_;
};

}  // namespace kiln::io
