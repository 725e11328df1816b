// safetensors header parsing and validation (no tensors are made here, so the
// fuzz target links only this file and its JSON helper).
#include <algorithm>
#include <cstring>
#include <limits>

#include "io/config_json.h"
#include "kiln/error.h"
#include "kiln/io/safetensors.h"

namespace kiln::io {
namespace {

struct DtypeName {
  const char* name;
  DType dtype;
};
constexpr DtypeName kDtypes[] = {
    {"BOOL", DType::Bool},
    {"U8", DType::UInt8},
    {"I8", DType::Int8},
    {"U16", DType::UInt16},
    {"I16", DType::Int16},
    {"U32", DType::UInt32},
    {"I32", DType::Int32},
    {"U64", DType::UInt64},
    {"I64", DType::Int64},
    {"F16", DType::Float16},
    {"BF16", DType::BFloat16},
    {"F32", DType::Float32},
    {"F64", DType::Float64},
    {"F8_E4M3", DType::Float8_e4m3fn},
    {"F8_E5M2", DType::Float8_e5m2},
    {"C64", DType::Complex64},
};

// The reference implementation's bound: a header is metadata, not data.
constexpr uint64_t kMaxHeader = 100'000'000;

}  // namespace

std::optional<DType> safetensors_dtype(std::string_view name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.dtype;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType d) {
  for (const auto& e : kDtypes)
    if (e.dtype == d) return e.name;
  throw TypeError(std::string("[safetensors] dtype ") + name(d) + " has no safetensors name");
}

SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, const std::string& name) {
  const char* op = "safetensors";
  KILN_CHECK(size >= 8, ValueError,
             "[" << op << "] " << name << " is too short (" << size << " bytes) to hold a header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  KILN_CHECK(
      n <= size - 8, ValueError,
      "[" << op << "] header length " << n << " runs past the end of " << name << " (" << size << " bytes)");
  KILN_CHECK(n <= kMaxHeader, ValueError,
             "[" << op << "] header length " << n << " in " << name << " is over the " << kMaxHeader
                 << "-byte limit");
  KILN_CHECK(n >= 2 && data[8] == '{', ValueError,
             "[" << op << "] " << name << " does not start with a JSON header (not a safetensors file?)");
  SafetensorsHeader h;
  h.header_len = n;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  const json j = parse_json_strict(std::string_view(reinterpret_cast<const char*>(data) + 8, n), op, name);
  KILN_CHECK(j.is_object(), ValueError, "[" << op << "] header of " << name << " is not a JSON object");

  for (const auto& item : j.items()) {
    const std::string key = item.key();
    const json& v = item.value();
    if (key == "__metadata__") {
      KILN_CHECK(v.is_object(), ValueError, "[" << op << "] __metadata__ in " << name << " is not an object");
      for (const auto& item : v.items()) {
        const std::string mk = item.key();
        const json& mv = item.value();
        KILN_CHECK(mv.is_string(), ValueError,
                   "[" << op << "] __metadata__ value for '" << mk << "' in " << name << " is not a string");
        h.metadata.emplace_back(mk, mv.get<std::string>());
      }
      continue;
    }
    const std::string where = "tensor '" + key + "' in " + name;
    KILN_CHECK(v.is_object(), ValueError, "[" << op << "] " << where << " is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    KILN_CHECK(dt != v.end() && dt->is_string(), ValueError,
               "[" << op << "] " << where << " has no dtype string");
    KILN_CHECK(sh != v.end() && sh->is_array(), ValueError,
               "[" << op << "] " << where << " has no shape array");
    KILN_CHECK(off != v.end() && off->is_array() && off->size() == 2, ValueError,
               "[" << op << "] " << where << " has no data_offsets [begin, end]");
    SafetensorsEntry e;
    e.name = key;
    const std::string dname = dt->get<std::string>();
    auto d = safetensors_dtype(dname);
    KILN_CHECK(d.has_value(), TypeError, "[" << op << "] " << where << " has unsupported dtype " << dname);
    e.dtype = *d;
    KILN_CHECK(sh->size() <= size_t(kMaxDims), ValueError,
               "[" << op << "] " << where << " has " << sh->size() << " dims (at most " << kMaxDims << ")");
    // numel * itemsize, overflow-checked in 128 bits.
    unsigned __int128 bytes = itemsize(e.dtype);
    for (const auto& s : *sh) {
      KILN_CHECK(s.is_number_unsigned() && s.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
                 ValueError, "[" << op << "] " << where << " has a bad shape " << sh->dump());
      const uint64_t dim = s.get<uint64_t>();
      e.shape.push_back(int64_t(dim));
      bytes *= dim;
      if (bytes > std::numeric_limits<uint64_t>::max()) bytes = std::numeric_limits<uint64_t>::max();
    }
    for (const auto& o : *off)
      KILN_CHECK(o.is_number_unsigned(), ValueError,
                 "[" << op << "] " << where << " has bad data_offsets " << off->dump());
    const uint64_t b = (*off)[0].get<uint64_t>(), en = (*off)[1].get<uint64_t>();
    KILN_CHECK(b <= en, ValueError,
               "[" << op << "] " << where << " has data_offsets end before begin " << off->dump());
    KILN_CHECK(en <= data_size, ValueError,
               "[" << op << "] " << where << " has data_offsets " << off->dump()
                   << " past the end of the data (" << data_size << " bytes)");
    KILN_CHECK(bytes == en - b, ValueError,
               "[" << op << "] " << where << ": shape " << sh->dump() << " of " << dname << " needs "
                   << uint64_t(bytes) << " bytes but data_offsets " << off->dump() << " hold " << en - b);
    e.begin = h.data_start + b;
    e.end = h.data_start + en;
    h.tensors.push_back(std::move(e));
  }

  // Byte ranges must tile the data section: no overlap, no hole (a hole could
  // smuggle another file inside this one), nothing after the last tensor.
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : h.tensors)
    if (e.end > e.begin) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  uint64_t pos = h.data_start;
  for (const auto* e : order) {
    KILN_CHECK(e->begin >= pos, ValueError,
               "[" << op << "] tensor '" << e->name << "' in " << name << " overlaps the tensor before it");
    KILN_CHECK(e->begin == pos, ValueError,
               "[" << op << "] " << name << " has " << e->begin - pos << " unused bytes before tensor '"
                   << e->name << "'");
    pos = e->end;
  }
  KILN_CHECK(pos == size, ValueError,
             "[" << op << "] " << name << " has " << size - pos << " bytes after the last tensor");
  return h;
}

}  // namespace kiln::io
