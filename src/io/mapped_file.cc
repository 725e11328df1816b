// MappedFile: mmap of a whole file, copy-on-write so that tensors viewing it
// may be written to without touching the file or faulting.
#include "kiln/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kiln/error.h"

namespace kiln::io {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_os_error(op, path, errno);
  struct stat st {};
  const int stat_err = ::fstat(fd, &st) != 0 ? errno : 0;
  if (stat_err != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (stat_err != 0) throw_os_error(op, path, stat_err);
    // A directory opens fine for reading; say what it is (Python: IsADirectoryError).
    if (S_ISDIR(st.st_mode)) throw_os_error(op, path, EISDIR);
    KILN_CHECK(false, ValueError, "[" << op << "] cannot open " << path << ": not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = size_t(st.st_size);
  if (f->size_ > 0) {
    // MAP_PRIVATE + PROT_WRITE: copy-on-write pages; MAP_NORESERVE keeps a
    // multi-GB mapping from being charged against the commit limit.
    void* p = ::mmap(nullptr, f->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw_os_error(op, path, err, "cannot map");
    }
    f->data_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  ::close(fd);
  f->weak_self_ = f;
  return f;
}

std::shared_ptr<MappedFile> MappedFile::from_bytes(std::string bytes, std::string name) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->owned_ = std::move(bytes);
  f->data_ = reinterpret_cast<const uint8_t*>(f->owned_.data());
  f->size_ = f->owned_.size();
  f->path_ = std::move(name);
  f->weak_self_ = f;
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::will_need(size_t offset, size_t length) const {
  if (!mapped_ || offset >= size_) return;
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = offset + std::min(length, size_ - offset);
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_WILLNEED);
}

void MappedFile::dont_need(size_t offset, size_t length) const {
  if (!mapped_ || offset >= size_) return;
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t base = reinterpret_cast<uintptr_t>(data_);
  // Only pages wholly inside the range: neighbours may still be in use.
  const uintptr_t b = (base + offset + page - 1) / page * page;
  const uintptr_t e = (base + offset + std::min(length, size_ - offset)) / page * page;
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

std::shared_ptr<const MappedFile> MappedFile::self() const {
  auto s = weak_self_.lock();
  KILN_CHECK(s != nullptr, ValueError, "[io] file " << path_ << " is no longer open");
  return s;
}

Tensor MappedFile::tensor_view(size_t offset, DType dtype, const Shape& shape) const {
  const uint8_t* p = data_ + offset;
  const size_t isz = itemsize(dtype);
  if (size_ == 0 || reinterpret_cast<uintptr_t>(p) % isz != 0) return from_buffer_copy(p, shape, dtype);
  auto keep = self();
  return from_blob(const_cast<uint8_t*>(p), shape, contiguous_strides(shape), dtype, [keep] {});
}

}  // namespace kiln::io
