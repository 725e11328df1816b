// GGUF v3 writer: header, metadata, tensor infos, then the aligned tensor data.
#include "kiln/io/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "kiln/error.h"

namespace kiln::io {
namespace {

// Little-endian bytes into a growing buffer (kiln runs on little-endian hosts only).
struct Out {
  std::string bytes;
  template <typename T>
  void put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(std::string_view s) {
    put<uint64_t>(s.size());
    bytes.append(s.data(), s.size());
  }
};

// One scalar of type t: integers from their 64-bit slot cast back to t's
// width (which restores any bits the reader kept), floats, bools, strings.
void put_scalar(Out& o, GGUFType t, int64_t i, uint64_t u, double f, const std::string& s) {
  switch (t) {
    case GGUFType::UInt8:
      return o.put<uint8_t>(uint8_t(u ? u : uint64_t(i)));
    case GGUFType::Int8:
      return o.put<int8_t>(int8_t(i));
    case GGUFType::UInt16:
      return o.put<uint16_t>(uint16_t(u ? u : uint64_t(i)));
    case GGUFType::Int16:
      return o.put<int16_t>(int16_t(i));
    case GGUFType::UInt32:
      return o.put<uint32_t>(uint32_t(u ? u : uint64_t(i)));
    case GGUFType::Int32:
      return o.put<int32_t>(int32_t(i));
    case GGUFType::UInt64:
      return o.put<uint64_t>(u ? u : uint64_t(i));
    case GGUFType::Int64:
      return o.put<int64_t>(i);
    case GGUFType::Float32:
      return o.put<float>(float(f));
    case GGUFType::Float64:
      return o.put<double>(f);
    case GGUFType::Bool:
      return o.put<uint8_t>(i != 0 ? 1 : 0);
    case GGUFType::String:
      return o.str(s);
    default:
      KILN_CHECK(false, ValueError, "[gguf.write] value type " << uint32_t(t) << " cannot be written");
  }
}

void put_value(Out& o, const std::string& key, const GGUFValue& v) {
  o.str(key);
  o.put<uint32_t>(uint32_t(v.type));
  if (!v.is_array()) {
    // Readers keep a bool in b; a value built by hand may set only b.
    const int64_t i = v.type == GGUFType::Bool ? int64_t(v.b || v.i != 0) : v.i;
    return put_scalar(o, v.type, i, v.u, v.f, v.s);
  }
  KILN_CHECK(v.elem_type != GGUFType::Array, ValueError, "[gguf.write] '" << key << "': nested arrays");
  o.put<uint32_t>(uint32_t(v.elem_type));
  const bool strings = v.elem_type == GGUFType::String;
  const bool floats = v.elem_type == GGUFType::Float32 || v.elem_type == GGUFType::Float64;
  o.put<uint64_t>(strings ? v.strings.size() : floats ? v.floats.size() : v.ints.size());
  if (strings)
    for (const std::string& s : v.strings) o.str(s);
  else if (floats)
    for (double f : v.floats) put_scalar(o, v.elem_type, 0, 0, f, {});
  else
    for (int64_t i : v.ints) put_scalar(o, v.elem_type, i, uint64_t(i), 0, {});
}

uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

uint64_t ggml_tensor_bytes(GGMLType t, const std::vector<int64_t>& ne) {
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(t));
  KILN_CHECK(info != nullptr, ValueError, "[gguf.write] unknown ggml type " << uint32_t(t));
  KILN_CHECK(!ne.empty() && ne[0] % info->block_size == 0, ValueError,
             "[gguf.write] rows of " << (ne.empty() ? 0 : ne[0]) << " elements are not whole " << info->name
                                     << " blocks of " << info->block_size);
  uint64_t rows = 1;
  for (size_t k = 1; k < ne.size(); ++k) rows *= uint64_t(ne[k]);
  return rows * uint64_t(ne[0]) / info->block_size * info->type_size;
}

std::string gguf_header_bytes(const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                              const std::vector<GGUFWriteTensor>& tensors, uint64_t alignment,
                              uint64_t* data_bytes) {
  KILN_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, ValueError,
             "[gguf.write] alignment " << alignment << " is not a power of two");
  // A reader assumes 32 unless general.alignment says otherwise.
  bool has_key = false;
  for (const auto& kv : metadata) {
    if (kv.first != "general.alignment") continue;
    const GGUFValue& v = kv.second;
    KILN_CHECK(!v.is_array() && (v.u ? v.u : uint64_t(v.i)) == alignment, ValueError,
               "[gguf.write] general.alignment " << v.to_string() << " disagrees with " << alignment);
    has_key = true;
  }
  KILN_CHECK(alignment <= std::numeric_limits<uint32_t>::max(), ValueError,
             "[gguf.write] alignment " << alignment << " does not fit general.alignment's uint32");
  const bool add_key = !has_key && alignment != 32;
  Out o;
  o.bytes.append("GGUF", 4);
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors.size());
  o.put<uint64_t>(metadata.size() + (add_key ? 1 : 0));
  for (const auto& [key, v] : metadata) put_value(o, key, v);
  if (add_key) {
    GGUFValue a;
    a.type = GGUFType::UInt32;
    a.u = alignment;
    put_value(o, "general.alignment", a);
  }
  uint64_t offset = 0;  // from the start of the data section
  for (const GGUFWriteTensor& t : tensors) {
    const uint64_t size = ggml_tensor_bytes(t.type, t.ne);
    o.str(t.name);
    o.put<uint32_t>(uint32_t(t.ne.size()));
    for (int64_t n : t.ne) o.put<uint64_t>(uint64_t(n));
    o.put<uint32_t>(uint32_t(t.type));
    o.put<uint64_t>(offset);
    offset = round_up(offset + size, alignment);
  }
  o.bytes.resize(round_up(o.bytes.size(), alignment), '\0');
  if (data_bytes) *data_bytes = offset;
  return std::move(o.bytes);
}

void write_gguf(const std::string& path, const std::vector<std::pair<std::string, GGUFValue>>& metadata,
                const std::vector<GGUFWriteTensor>& tensors, uint64_t alignment,
                const std::function<void(size_t, uint8_t*)>& fill) {
  Out o;
  o.bytes = gguf_header_bytes(metadata, tensors, alignment);
  std::vector<uint64_t> sizes;
  for (const GGUFWriteTensor& t : tensors) sizes.push_back(ggml_tensor_bytes(t.type, t.ne));

  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw_os_error("gguf.write", path, errno, "cannot create");
  int err = 0;
  auto write = [&](const void* p, size_t n) {
    if (err == 0 && n != 0 && std::fwrite(p, 1, n, f) != n) err = errno ? errno : EIO;  // a full disk: ENOSPC
  };
  try {
    write(o.bytes.data(), o.bytes.size());
    std::vector<uint8_t> buf;
    static const char zeros[256] = {};
    for (size_t k = 0; k < tensors.size() && err == 0; ++k) {
      buf.assign(sizes[k], 0);
      fill(k, buf.data());
      write(buf.data(), buf.size());
      const uint64_t pad = round_up(sizes[k], alignment) - sizes[k];
      for (uint64_t left = pad; left > 0;) {
        const size_t n = size_t(std::min<uint64_t>(left, sizeof(zeros)));
        write(zeros, n);
        left -= n;
      }
    }
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;  // a directory at path: EISDIR
  if (err != 0) {
    std::remove(tmp.c_str());
    throw_os_error("gguf.write", path, err, "cannot write");
  }
}

}  // namespace kiln::io
