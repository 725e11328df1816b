// safetensors files: zero-copy tensor views, writing, sharded checkpoints.
#include "kiln/io/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <set>

#include "io/config_json.h"
#include "kiln/error.h"

namespace kiln::io {

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  return from_file(MappedFile::open(path, "safetensors"));
}

SafetensorsFile SafetensorsFile::from_file(std::shared_ptr<MappedFile> file) {
  SafetensorsFile f;
  f.header_ = parse_safetensors_header(file->data(), file->size(), file->path());
  f.file_ = std::move(file);
  for (size_t i = 0; i < f.header_.tensors.size(); ++i) f.index_.emplace(f.header_.tensors[i].name, i);
  return f;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

Tensor SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  KILN_CHECK(e != nullptr, IndexError, "[safetensors] no tensor named '" << name << "' in " << file_->path());
  return tensor(*e);
}

Tensor SafetensorsFile::tensor(const SafetensorsEntry& e) const {
  return file_->tensor_view(size_t(e.begin), e.dtype, e.shape);
}

// ---- writing --------------------------------------------------------------------

namespace {

// The header bytes (length prefix + padded JSON) and the order tensors follow it in.
std::string safetensors_header_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                     const Metadata& metadata, std::vector<size_t>& order,
                                     uint64_t& data_bytes) {
  const char* op = "safetensors.save";
  order.resize(tensors.size());
  std::set<std::string_view> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    order[i] = i;
    const std::string& name = tensors[i].first;
    const Tensor& t = tensors[i].second;
    KILN_CHECK(t.defined(), ValueError, "[" << op << "] tensor '" << name << "' is undefined");
    KILN_CHECK(name != "__metadata__", ValueError, "[" << op << "] '__metadata__' is not a tensor name");
    KILN_CHECK(seen.insert(name).second, ValueError, "[" << op << "] duplicate tensor name '" << name << "'");
    (void)safetensors_dtype_name(t.dtype());  // refuses dtypes safetensors cannot name
  }
  // Largest itemsize first keeps every tensor aligned to its element size.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t ia = tensors[a].second.itemsize(), ib = tensors[b].second.itemsize();
    return ia != ib ? ia > ib : tensors[a].first < tensors[b].first;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const Tensor& t = tensors[i].second;
    const uint64_t nb = t.nbytes();
    header[tensors[i].first] = {{"dtype", safetensors_dtype_name(t.dtype())},
                                {"shape", t.sizes()},
                                {"data_offsets", {offset, offset + nb}}};
    offset += nb;
  }
  data_bytes = offset;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data section starts 8-aligned
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xff));
  return out + text;
}

}  // namespace

std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const Metadata& metadata) {
  std::vector<size_t> order;
  uint64_t data_bytes = 0;
  std::string out = safetensors_header_bytes(tensors, metadata, order, data_bytes);
  out.reserve(out.size() + data_bytes);
  for (size_t i : order) {
    const Tensor c = tensors[i].second.contiguous();
    if (c.nbytes()) out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  return out;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const Metadata& metadata) {
  std::vector<size_t> order;
  uint64_t data_bytes = 0;
  const std::string header = safetensors_header_bytes(tensors, metadata, order, data_bytes);
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw_os_error("safetensors.save", path, errno, "cannot create");
  // Streamed tensor by tensor: a multi-GB checkpoint never sits in memory twice.
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (size_t k = 0; k < order.size() && ok; ++k) {
    const Tensor c = tensors[order[k]].second.contiguous();
    ok = c.nbytes() == 0 || std::fwrite(c.data_ptr(), 1, c.nbytes(), f) == c.nbytes();
  }
  int err = ok ? 0 : errno;  // a full disk: ENOSPC
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;  // a directory at path: EISDIR
  if (err != 0) {
    std::remove(tmp.c_str());
    throw_os_error("safetensors.save", path, err, "cannot write");
  }
}

// ---- sharded checkpoints -----------------------------------------------------------

namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  const char* op = "safetensors";
  std::string file = path;
  if (is_dir(path)) {
    if (exists(path + "/model.safetensors.index.json"))
      file = path + "/model.safetensors.index.json";
    else if (exists(path + "/model.safetensors"))
      file = path + "/model.safetensors";
    else
      KILN_CHECK(
          false, ValueError,
          "[" << op << "] " << path << " holds neither model.safetensors nor model.safetensors.index.json");
  }
  SafetensorsCheckpoint ck;
  if (!ends_with(file, ".json")) {
    ck.shards_.push_back(SafetensorsFile::open(file));
    for (const auto& e : ck.shards_[0].tensors()) ck.where_.emplace(e.name, 0);
    ck.metadata_ = ck.shards_[0].metadata();
    return ck;
  }
  const json j = parse_json_strict(read_text_file(file, op, size_t(1) << 28), op, file);
  KILN_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), ValueError,
             "[" << op << "] " << file << " has no weight_map object");
  if (auto m = j.find("metadata"); m != j.end() && m->is_object())
    for (const auto& [k, v] : m->items())
      ck.metadata_.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  const std::string dir = dir_of(file);
  std::map<std::string, size_t> shard_index;
  for (const auto& item : j["weight_map"].items()) {
    const std::string name = item.key();
    const json& v = item.value();
    KILN_CHECK(v.is_string(), ValueError,
               "[" << op << "] weight_map entry '" << name << "' in " << file << " is not a file name");
    const std::string shard = v.get<std::string>();
    // A shard is a plain file name beside the index: never a path out of the directory.
    KILN_CHECK(!shard.empty() && shard.find('/') == std::string::npos && shard != "." && shard != "..",
               ValueError,
               "[" << op << "] weight_map entry '" << name << "' in " << file << " names '" << shard
                   << "', which is not a file name beside the index");
    auto [it, fresh] = shard_index.emplace(shard, ck.shards_.size());
    if (fresh) ck.shards_.push_back(SafetensorsFile::open(dir + "/" + shard));
    const SafetensorsFile& sf = ck.shards_[it->second];
    KILN_CHECK(
        sf.find(name) != nullptr, ValueError,
        "[" << op << "] " << file << " places '" << name << "' in " << shard << ", which does not hold it");
    ck.where_.emplace(name, it->second);
  }
  return ck;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [k, v] : where_) out.push_back(k);
  return out;
}

const SafetensorsEntry& SafetensorsCheckpoint::entry(std::string_view name) const {
  auto it = where_.find(name);
  KILN_CHECK(it != where_.end(), IndexError,
             "[safetensors] no tensor named '" << name << "' in the checkpoint");
  return *shards_[it->second].find(name);
}

Tensor SafetensorsCheckpoint::tensor(std::string_view name) const {
  auto it = where_.find(name);
  KILN_CHECK(it != where_.end(), IndexError,
             "[safetensors] no tensor named '" << name << "' in the checkpoint");
  return shards_[it->second].tensor(name);
}

}  // namespace kiln::io
