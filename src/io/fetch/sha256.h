// SHA-256 (FIPS 180-4), streaming: feed bytes in any pieces, then hex_digest().
// Used to check downloaded model files; not a security boundary by itself.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::llm {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Finishes the hash (the object is then spent); 32 bytes / 64 lowercase hex digits.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();

 private:
  void block(const uint8_t* p);  // one 64-byte block into state_
  uint32_t state_[8];
  uint8_t buf_[64] = {};
  size_t buffered_ = 0;
  uint64_t total_ = 0;  // bytes fed
  bool done_ = false;
};

std::string sha256_hex(std::string_view data);
// Reads PATH in 1 MiB pieces. ValueError "[sha256] cannot read PATH: reason".
std::string sha256_file(const std::string& path);

}  // namespace kiln::llm
