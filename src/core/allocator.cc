#include "kiln/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace kiln {
namespace {

constexpr size_t kAlign = 64;
// Blocks at least this large are page-aligned so big tensors start on a page.
constexpr size_t kLargeBlock = size_t(1) << 20;

// Sizes are rounded up so that nearby requests share a size class: to 64 bytes
// below 1 MiB, then to 1/8 of the next power of two.
size_t round_size(size_t n) {
  if (n == 0) n = 1;
  if (n < kLargeBlock) return (n + kAlign - 1) & ~(kAlign - 1);
  size_t p = 1;
  while (p < n) p <<= 1;
  const size_t step = p / 8;
  return (n + step - 1) / step * step;
}

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size class -> block
  MemoryStats stats;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: tensors may outlive statics
  return *c;
}

}  // namespace

void* allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.alloc_count;
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end()) {
      void* p = it->second;
      c.free_blocks.erase(it);
      ++c.stats.cache_hits;
      c.stats.current_bytes += size;
      if (c.stats.current_bytes > c.stats.peak_bytes) c.stats.peak_bytes = c.stats.current_bytes;
      return p;
    }
  }
  const size_t align = size >= kLargeBlock ? 4096 : kAlign;
  void* p = std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr) {
    empty_cache();
    p = std::aligned_alloc(align, (size + align - 1) / align * align);
    if (p == nullptr) throw std::bad_alloc();
  }
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.current_bytes += size;
  c.stats.reserved_bytes += size;
  if (c.stats.current_bytes > c.stats.peak_bytes) c.stats.peak_bytes = c.stats.current_bytes;
  return p;
}

void deallocate(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  const size_t size = round_size(nbytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.current_bytes -= size;
  c.free_blocks.emplace(size, ptr);
}

MemoryStats memory_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

void reset_peak_memory_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.peak_bytes = c.stats.current_bytes;
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, p] : c.free_blocks) {
    std::free(p);
    c.stats.reserved_bytes -= size;
  }
  c.free_blocks.clear();
}

}  // namespace kiln
