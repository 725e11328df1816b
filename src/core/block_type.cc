// The table of ggml block types (kiln/block_quant.h): names and sizes.
#include <algorithm>
#include <array>
#include <cctype>

#include "kiln/block_quant.h"
#include "kiln/error.h"

namespace kiln {
namespace {
constexpr std::array<BlockTypeInfo, kBlockTypes> kInfo = {{
    {"Q4_0", 32, 18},
    {"Q4_1", 32, 20},
    {"Q5_0", 32, 22},
    {"Q5_1", 32, 24},
    {"Q8_0", 32, 34},
    {"Q2_K", 256, 84},
    {"Q3_K", 256, 110},
    {"Q4_K", 256, 144},
    {"Q5_K", 256, 176},
    {"Q6_K", 256, 210},
    {"Q8_K", 256, 292},
    {"IQ4_NL", 32, 18},
    {"IQ4_XS", 256, 136},
}};
}  // namespace

const BlockTypeInfo& block_type_info(BlockType t) { return kInfo.at(size_t(t)); }

std::optional<BlockType> block_type_from_name(std::string_view name) {
  for (int i = 0; i < kBlockTypes; ++i) {
    const std::string_view n = kInfo[size_t(i)].name;
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
        }))
      return BlockType(i);
  }
  return std::nullopt;
}

const std::string& block_type_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& i : kInfo) s += (s.empty() ? "" : ", ") + std::string(i.name);
    return s;
  }();
  return names;
}

int64_t block_row_bytes(BlockType t, int64_t K) {
  const BlockTypeInfo& i = block_type_info(t);
  KILN_CHECK(K >= 0 && K % i.block_size == 0, ValueError,
             "[" << i.name << "] rows of " << K << " elements are not whole blocks of " << i.block_size);
  return K / i.block_size * i.block_bytes;
}

}  // namespace kiln
