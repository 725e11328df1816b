// GGUF header parsing and validation. Every read goes through Reader, which
// checks the remaining length first; counts taken from the file are bounded
// by the bytes left before anything is reserved.
#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "kiln/error.h"
#include "kiln/io/gguf.h"

namespace kiln::io {
namespace {

constexpr GGMLTypeInfo kUnknown{nullptr, 0, 0, false};
// Indexed by ggml type number; name == nullptr marks a retired or unknown number.
constexpr GGMLTypeInfo kTypes[] = {
    {"F32", 1, 4, true},
    {"F16", 1, 2, true},
    {"Q4_0", 32, 18, true},
    {"Q4_1", 32, 20, true},
    kUnknown,
    kUnknown,
    {"Q5_0", 32, 22, true},
    {"Q5_1", 32, 24, true},
    {"Q8_0", 32, 34, true},
    {"Q8_1", 32, 36, false},
    {"Q2_K", 256, 84, true},
    {"Q3_K", 256, 110, true},
    {"Q4_K", 256, 144, true},
    {"Q5_K", 256, 176, true},
    {"Q6_K", 256, 210, true},
    {"Q8_K", 256, 292, true},
    {"IQ2_XXS", 256, 66, false},
    {"IQ2_XS", 256, 74, false},
    {"IQ3_XXS", 256, 98, false},
    {"IQ1_S", 256, 50, false},
    {"IQ4_NL", 32, 18, true},
    {"IQ3_S", 256, 110, false},
    {"IQ2_S", 256, 82, false},
    {"IQ4_XS", 256, 136, true},
    {"I8", 1, 1, true},
    {"I16", 1, 2, true},
    {"I32", 1, 4, true},
    {"I64", 1, 8, true},
    {"F64", 1, 8, true},
    {"IQ1_M", 256, 56, false},
    {"BF16", 1, 2, true},
    kUnknown,
    kUnknown,
    kUnknown,
    {"TQ1_0", 256, 54, false},
    {"TQ2_0", 256, 66, false},
    kUnknown,
    kUnknown,
    kUnknown,
    {"MXFP4", 32, 17, false},
};

constexpr const char* kTypeNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                      "bool",  "string", "array",  "uint64", "int64",  "float64"};

// True when s is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else
      return false;
    if (n - i < size_t(len)) return false;
    for (int k = 1; k < len; ++k) {
      const uint8_t cc = uint8_t(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += size_t(len);
  }
  return true;
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& name) : p_(data), size_(size), name_(name) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));  // GGUF is little-endian, as is every host kiln runs on
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    KILN_CHECK(len <= left(), ValueError,
               "[gguf] " << what << " at byte " << pos_ - 8 << " of " << name_ << " claims " << len
                         << " bytes; only " << left() << " remain");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(len));
    KILN_CHECK(valid_utf8(s), ValueError,
               "[gguf] " << what << " at byte " << pos_ << " of " << name_ << " is not valid UTF-8");
    pos_ += size_t(len);
    return s;
  }
  void need(size_t n, const char* what) {
    KILN_CHECK(n <= left(), ValueError,
               "[gguf] " << name_ << " is truncated: " << what << " at byte " << pos_ << " needs " << n
                         << " bytes, " << left() << " remain");
  }
  [[noreturn]] void fail(const std::string& msg) const { throw ValueError("[gguf] " + msg + " in " + name_); }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

size_t scalar_size(GGUFType t) {
  switch (t) {
    case GGUFType::UInt8:
    case GGUFType::Int8:
    case GGUFType::Bool:
      return 1;
    case GGUFType::UInt16:
    case GGUFType::Int16:
      return 2;
    case GGUFType::UInt32:
    case GGUFType::Int32:
    case GGUFType::Float32:
      return 4;
    case GGUFType::UInt64:
    case GGUFType::Int64:
    case GGUFType::Float64:
      return 8;
    case GGUFType::String:
      return 8;  // at least its length
    default:
      return 0;
  }
}

// One scalar of type t into (int, uint, float, bool) slots.
void read_scalar(Reader& r, GGUFType t, GGUFValue& v, int64_t* as_int, double* as_float,
                 std::string* as_str) {
  switch (t) {
    case GGUFType::UInt8:
      v.u = r.read<uint8_t>("uint8");
      *as_int = int64_t(v.u);
      break;
    case GGUFType::Int8:
      *as_int = r.read<int8_t>("int8");
      break;
    case GGUFType::UInt16:
      v.u = r.read<uint16_t>("uint16");
      *as_int = int64_t(v.u);
      break;
    case GGUFType::Int16:
      *as_int = r.read<int16_t>("int16");
      break;
    case GGUFType::UInt32:
      v.u = r.read<uint32_t>("uint32");
      *as_int = int64_t(v.u);
      break;
    case GGUFType::Int32:
      *as_int = r.read<int32_t>("int32");
      break;
    case GGUFType::UInt64:
      v.u = r.read<uint64_t>("uint64");
      *as_int = int64_t(v.u);
      break;
    case GGUFType::Int64:
      *as_int = r.read<int64_t>("int64");
      break;
    case GGUFType::Float32:
      *as_float = r.read<float>("float32");
      break;
    case GGUFType::Float64:
      *as_float = r.read<double>("float64");
      break;
    case GGUFType::Bool:
      *as_int = r.read<uint8_t>("bool") != 0;
      break;
    case GGUFType::String:
      *as_str = r.string("string value");
      break;
    default:
      r.fail("unknown value type");
  }
}

GGUFValue read_value(Reader& r, GGUFType t, const std::string& key) {
  GGUFValue v;
  v.type = t;
  if (t != GGUFType::Array) {
    KILN_CHECK(uint32_t(t) <= uint32_t(GGUFType::Float64), ValueError,
               "[gguf] metadata '" << key << "' has unknown value type " << uint32_t(t));
    read_scalar(r, t, v, &v.i, &v.f, &v.s);
    if (t == GGUFType::Bool) v.b = v.i != 0;
    if (t == GGUFType::UInt64 && v.u > uint64_t(std::numeric_limits<int64_t>::max())) v.i = 0;
    return v;
  }
  const uint32_t et = r.read<uint32_t>("array type");
  KILN_CHECK(et <= uint32_t(GGUFType::Float64) && et != uint32_t(GGUFType::Array), ValueError,
             "[gguf] metadata '" << key << "' is an array of "
                                 << (et == 9 ? "arrays (not supported)" : "unknown type ")
                                 << (et == 9 ? "" : std::to_string(et)));
  v.elem_type = GGUFType(et);
  const uint64_t n = r.read<uint64_t>("array length");
  const size_t esz = scalar_size(v.elem_type);
  KILN_CHECK(
      n <= r.left() / esz, ValueError,
      "[gguf] metadata '" << key << "' claims " << n << " elements; only " << r.left() << " bytes remain");
  for (uint64_t k = 0; k < n; ++k) {
    int64_t iv = 0;
    double fv = 0;
    std::string sv;
    read_scalar(r, v.elem_type, v, &iv, &fv, &sv);
    if (v.elem_type == GGUFType::String)
      v.strings.push_back(std::move(sv));
    else if (v.elem_type == GGUFType::Float32 || v.elem_type == GGUFType::Float64)
      v.floats.push_back(fv);
    else
      v.ints.push_back(iv);
  }
  v.u = 0;
  return v;
}

}  // namespace

const char* gguf_type_name(GGUFType t) {
  return uint32_t(t) < std::size(kTypeNames) ? kTypeNames[uint32_t(t)] : "unknown";
}

bool GGUFValue::is_int() const {
  switch (type) {
    case GGUFType::UInt8:
    case GGUFType::Int8:
    case GGUFType::UInt16:
    case GGUFType::Int16:
    case GGUFType::UInt32:
    case GGUFType::Int32:
    case GGUFType::UInt64:
    case GGUFType::Int64:
      return true;
    default:
      return false;
  }
}

std::string GGUFValue::to_string(size_t max_items) const {
  std::ostringstream os;
  os.precision(9);
  if (type == GGUFType::String) {
    os << '"' << (s.size() > 60 ? s.substr(0, 60) + "..." : s) << '"';
  } else if (type == GGUFType::Bool) {
    os << (b ? "true" : "false");
  } else if (is_float()) {
    os << f;
  } else if (type == GGUFType::UInt64) {
    os << u;
  } else if (is_int()) {
    os << i;
  } else {
    const size_t n = array_size();
    os << "[" << gguf_type_name(elem_type) << " x " << n << "]";
    if (n) os << " ";
    for (size_t k = 0; k < std::min(n, max_items); ++k) {
      if (k) os << ", ";
      if (!strings.empty())
        os << '"' << strings[k] << '"';
      else if (!floats.empty())
        os << floats[k];
      else
        os << ints[k];
    }
    if (n > max_items) os << ", ...";
  }
  return os.str();
}

const GGMLTypeInfo* ggml_type_info(uint32_t type) {
  if (type >= std::size(kTypes) || kTypes[type].name == nullptr) return nullptr;
  return &kTypes[type];
}

const std::string& ggml_dequantizable_type_names() {
  static const std::string names = [] {
    std::string out;
    for (const auto& t : kTypes)
      if (t.name != nullptr && t.dequantizable) out += (out.empty() ? "" : ", ") + std::string(t.name);
    return out;
  }();
  return names;
}

std::optional<DType> ggml_plain_dtype(GGMLType t) {
  switch (t) {
    case GGMLType::F32:
      return DType::Float32;
    case GGMLType::F16:
      return DType::Float16;
    case GGMLType::BF16:
      return DType::BFloat16;
    case GGMLType::F64:
      return DType::Float64;
    case GGMLType::I8:
      return DType::Int8;
    case GGMLType::I16:
      return DType::Int16;
    case GGMLType::I32:
      return DType::Int32;
    case GGMLType::I64:
      return DType::Int64;
    default:
      return std::nullopt;
  }
}

std::optional<BlockType> ggml_block_type(GGMLType t) {
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(t));
  if (!info || ggml_plain_dtype(t)) return std::nullopt;
  return block_type_from_name(info->name);
}

GGUFHeader parse_gguf(const uint8_t* data, size_t size, const std::string& name) {
  Reader r(data, size, name);
  GGUFHeader h;
  r.need(4, "magic");
  KILN_CHECK(std::memcmp(data, "GGUF", 4) == 0, ValueError,
             "[gguf] " << name << " does not start with the GGUF magic (not a GGUF file?)");
  r.read<uint32_t>("magic");
  h.version = r.read<uint32_t>("version");
  KILN_CHECK(h.version != 1, ValueError,
             "[gguf] " << name << " is GGUF version 1, which kiln does not read (re-convert it)");
  KILN_CHECK(h.version == 2 || h.version == 3, ValueError,
             "[gguf] " << name << " has GGUF version " << h.version
                       << ((h.version & 0xFFFF) == 0 ? " (a big-endian file?)" : "")
                       << "; kiln reads 2 and 3");
  const uint64_t n_tensors = r.read<uint64_t>("tensor count");
  const uint64_t n_kv = r.read<uint64_t>("metadata count");
  // Each key-value takes >= 13 bytes and each tensor info >= 24: bound the counts by the file.
  KILN_CHECK(n_kv <= r.left() / 13, ValueError,
             "[gguf] " << name << " claims " << n_kv << " metadata entries; the file is too small for that");
  KILN_CHECK(n_tensors <= r.left() / 24, ValueError,
             "[gguf] " << name << " claims " << n_tensors << " tensors; the file is too small for that");

  std::set<std::string, std::less<>> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.string("metadata key");
    KILN_CHECK(keys.insert(key).second, ValueError,
               "[gguf] duplicate metadata key '" << key << "' in " << name);
    const uint32_t t = r.read<uint32_t>("value type");
    KILN_CHECK(t <= uint32_t(GGUFType::Float64), ValueError,
               "[gguf] metadata '" << key << "' in " << name << " has unknown value type " << t);
    GGUFValue v = read_value(r, GGUFType(t), key);
    if (key == "general.alignment") {
      KILN_CHECK(
          v.type == GGUFType::UInt32 && v.u > 0 && (v.u & (v.u - 1)) == 0, ValueError,
          "[gguf] general.alignment in " << name << " must be a power-of-two uint32, got " << v.to_string());
      h.alignment = v.u;
    }
    h.metadata.emplace_back(std::move(key), std::move(v));
  }

  std::set<std::string, std::less<>> names;
  h.tensors.reserve(size_t(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GGUFTensorInfo ti;
    ti.name = r.string("tensor name");
    KILN_CHECK(names.insert(ti.name).second, ValueError,
               "[gguf] duplicate tensor name '" << ti.name << "' in " << name);
    const uint32_t nd = r.read<uint32_t>("tensor dims");
    KILN_CHECK(nd >= 1 && nd <= 4, ValueError,
               "[gguf] tensor '" << ti.name << "' in " << name << " has " << nd << " dims (1 to 4 allowed)");
    unsigned __int128 numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t ne = r.read<uint64_t>("tensor dim");
      KILN_CHECK(ne <= uint64_t(std::numeric_limits<int64_t>::max()), ValueError,
                 "[gguf] tensor '" << ti.name << "' in " << name << " has a dim of " << ne);
      ti.ne.push_back(int64_t(ne));
      numel *= ne;
      KILN_CHECK(numel <= uint64_t(std::numeric_limits<int64_t>::max()), ValueError,
                 "[gguf] tensor '" << ti.name << "' in " << name << " has too many elements");
    }
    ti.numel = int64_t(numel);
    ti.shape.assign(ti.ne.rbegin(), ti.ne.rend());
    const uint32_t type = r.read<uint32_t>("tensor type");
    const GGMLTypeInfo* info = ggml_type_info(type);
    KILN_CHECK(info != nullptr, ValueError,
               "[gguf] tensor '" << ti.name << "' in " << name << " has unknown ggml type " << type);
    ti.type = GGMLType(type);
    KILN_CHECK(ti.ne[0] % info->block_size == 0, ValueError,
               "[gguf] tensor '" << ti.name << "' in " << name << ": row length " << ti.ne[0]
                                 << " is not a multiple of the " << info->name << " block size "
                                 << info->block_size);
    ti.nbytes = uint64_t(numel / info->block_size * info->type_size);  // < 2^63 * 292/256: checked below
    KILN_CHECK(numel / info->block_size * info->type_size <= std::numeric_limits<uint64_t>::max() / 2,
               ValueError, "[gguf] tensor '" << ti.name << "' in " << name << " is too large");
    ti.offset = r.read<uint64_t>("tensor offset");
    KILN_CHECK(ti.offset % h.alignment == 0, ValueError,
               "[gguf] tensor '" << ti.name << "' in " << name << " has offset " << ti.offset
                                 << ", not a multiple of the alignment " << h.alignment);
    h.tensors.push_back(std::move(ti));
  }

  // Data starts at the next multiple of the alignment after the tensor infos.
  const uint64_t end_infos = r.pos();
  h.data_start = (end_infos + h.alignment - 1) / h.alignment * h.alignment;
  KILN_CHECK(h.tensors.empty() || h.data_start <= size, ValueError,
             "[gguf] " << name << " is truncated: the data section would start at byte " << h.data_start);
  const uint64_t data_size = size >= h.data_start ? size - h.data_start : 0;
  for (auto& ti : h.tensors) {
    KILN_CHECK(ti.offset <= data_size && ti.nbytes <= data_size - ti.offset, ValueError,
               "[gguf] tensor '" << ti.name << "' in " << name << " runs past the end of the file (offset "
                                 << ti.offset << " + " << ti.nbytes << " bytes > " << data_size
                                 << " bytes of data)");
    ti.offset += h.data_start;
  }
  std::vector<const GGUFTensorInfo*> order;
  for (const auto& ti : h.tensors)
    if (ti.nbytes) order.push_back(&ti);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k)
    KILN_CHECK(
        order[k]->offset >= order[k - 1]->offset + order[k - 1]->nbytes, ValueError,
        "[gguf] tensors '" << order[k - 1]->name << "' and '" << order[k]->name << "' overlap in " << name);
  return h;
}

}  // namespace kiln::io
