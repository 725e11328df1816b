#include "kiln/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/error.h"

namespace kiln {
namespace {

constexpr size_t kAlign = 64;
// Blocks at least this large are page-aligned so big tensors start on a page.
constexpr size_t kLargeBlock = size_t(1) << 20;
// Blocks at least this large start on a 2 MiB boundary and are offered to
// the kernel's transparent huge pages (madvise; a no-op where THP is off):
// the GEMMs walk weights and packed activations in strides that touch a new
// 4 KiB page every few lines, and the page walks cost 1.1x at 512 tokens and
// 1.2x at 2048 (4096 x 4096 bf16 on AMX, Sapphire Rapids-class core). With
// the kernel's default defrag setting a fault may compact memory first: a
// one-time cost when the block is first touched. KILN_HUGE_PAGES=off keeps
// 4 KiB pages.
constexpr size_t kHugeBlock = size_t(4) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

bool huge_pages_wanted() {
  static const bool on = [] {
    const char* env = std::getenv("KILN_HUGE_PAGES");
    return env == nullptr || std::string(env) != "off";
  }();
  return on;
}

// A kiln error (not std::bad_alloc) so that the request's size reaches the user.
[[noreturn]] void out_of_memory(size_t nbytes, const char* why) {
  throw OutOfMemoryError("[allocate] cannot allocate " + std::to_string(nbytes) + " bytes: " + why, nbytes);
}

// Sizes are rounded up so that nearby requests share a size class: to 64 bytes
// below 1 MiB, then to 1/8 of the next power of two.
size_t round_size(size_t n) {
  if (n == 0) n = 1;
  // No machine has it; avoids overflow below.
  if (n > (size_t(1) << 62)) out_of_memory(n, "larger than any address space");
  if (n < kLargeBlock) return (n + kAlign - 1) & ~(kAlign - 1);
  size_t p = 1;
  while (p < n) p <<= 1;
  const size_t step = p / 8;
  return (n + step - 1) / step * step;
}

// How much freed memory the cache may hold before it returns blocks to the
// system: KILN_ALLOC_CACHE_MB, or a quarter of physical memory. Without a
// bound, a process whose tensor sizes keep changing would hoard everything it
// ever freed.
size_t cache_limit_bytes() {
  if (const char* env = std::getenv("KILN_ALLOC_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (end != env) return size_t(mb) << 20;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) return size_t(pages) * size_t(page) / 4;
  return size_t(1) << 30;
}

// A request of a large size class may take a cached block up to this many
// times its size rather than new memory: new pages cost a fault each (and, in
// a virtual machine, often the host's first touch too: a Wan VAE decode spent
// 30% of its time faulting in blocks of sizes it had just freed), while the
// cached block is held either way.
constexpr size_t kReuseFactor = 2;

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size class -> block
  // Blocks handed out for a smaller size class than their own -> their size.
  std::unordered_map<void*, size_t> larger_blocks;
  size_t cached_bytes = 0;
  size_t limit = cache_limit_bytes();
  MemoryStats stats;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: tensors may outlive statics
  return *c;
}

// Frees the largest cached blocks until at most `keep` bytes stay cached.
void trim_locked(Cache& c, size_t keep) {
  while (c.cached_bytes > keep && !c.free_blocks.empty()) {
    auto largest = std::prev(c.free_blocks.end());
    std::free(largest->second);
    c.cached_bytes -= largest->first;
    c.stats.reserved_bytes -= largest->first;
    c.free_blocks.erase(largest);
  }
}

// The host's caching allocator. final: the shortcuts below call it directly.
class HostAllocator final : public Allocator {
 public:
  Device device() const override { return Device{}; }
  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  MemoryStats stats() override;
  void reset_peak_stats() override;
  void empty_cache() override;
  size_t cache_limit() override;
  void set_cache_limit(size_t bytes) override;
};

void* HostAllocator::allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.alloc_count;
    // The exact class, or for a large request the smallest cached block within kReuseFactor.
    auto it = size < kLargeBlock ? c.free_blocks.find(size) : c.free_blocks.lower_bound(size);
    if (it != c.free_blocks.end() && it->first <= size * kReuseFactor) {
      void* p = it->second;
      const size_t block = it->first;
      c.free_blocks.erase(it);
      c.cached_bytes -= block;
      if (block != size) c.larger_blocks.emplace(p, block);
      ++c.stats.cache_hits;
      c.stats.current_bytes += block;
      if (c.stats.current_bytes > c.stats.peak_bytes) c.stats.peak_bytes = c.stats.current_bytes;
      return p;
    }
  }
  const bool huge = size >= kHugeBlock && huge_pages_wanted();
  const size_t align = huge ? kHugePage : size >= kLargeBlock ? 4096 : kAlign;
  const size_t bytes = (size + align - 1) / align * align;
  void* p = std::aligned_alloc(align, bytes);
  if (p == nullptr) {
    empty_cache();
    p = std::aligned_alloc(align, bytes);
    if (p == nullptr) out_of_memory(nbytes, "out of memory");
  }
  if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.current_bytes += size;
  c.stats.reserved_bytes += size;
  if (c.stats.current_bytes > c.stats.peak_bytes) c.stats.peak_bytes = c.stats.current_bytes;
  return p;
}

void HostAllocator::deallocate(void* ptr, size_t nbytes) {
  if (ptr == nullptr) return;
  size_t size = round_size(nbytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (size >= kLargeBlock && !c.larger_blocks.empty()) {
    if (auto it = c.larger_blocks.find(ptr); it != c.larger_blocks.end()) {
      size = it->second;
      c.larger_blocks.erase(it);
    }
  }
  c.stats.current_bytes -= size;
  if (size > c.limit) {  // too big to ever keep
    std::free(ptr);
    c.stats.reserved_bytes -= size;
    return;
  }
  // Make room by returning the largest cached blocks first; the block freed
  // now is the likeliest to be asked for again, so it stays.
  trim_locked(c, c.limit - size);
  c.free_blocks.emplace(size, ptr);
  c.cached_bytes += size;
}

size_t HostAllocator::cache_limit() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.limit;
}

void HostAllocator::set_cache_limit(size_t bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.limit = bytes;
  trim_locked(c, bytes);
}

MemoryStats HostAllocator::stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

void HostAllocator::reset_peak_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.peak_bytes = c.stats.current_bytes;
}

void HostAllocator::empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, p] : c.free_blocks) {
    std::free(p);
    c.stats.reserved_bytes -= size;
  }
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

HostAllocator& host() {
  static HostAllocator* a = new HostAllocator();  // never destroyed, as the cache
  return *a;
}

}  // namespace

Allocator& cpu_allocator() { return host(); }

namespace {
// One lookup per device kind; the CPU's slot stays empty (host() serves it).
std::atomic<AllocatorLookup> device_lookups[kDeviceKinds] = {};

Allocator* find_allocator(Device device) {
  if (device.kind == DeviceKind::CPU) return &host();
  const AllocatorLookup lookup = device_lookups[size_t(device.kind)].load(std::memory_order_acquire);
  if (!lookup) return nullptr;
  return lookup(Device{device.kind, device.has_index() ? device.index : 0});
}
}  // namespace

void register_device_allocators(DeviceKind kind, AllocatorLookup lookup) {
  if (kind == DeviceKind::CPU)
    throw ValueError("[register_device_allocators] the CPU's allocator cannot be replaced");
  device_lookups[size_t(kind)].store(lookup, std::memory_order_release);
}

bool device_available(Device device) { return find_allocator(device) != nullptr; }

Allocator& allocator_for(Device device, const char* op) {
  if (device.kind == DeviceKind::CPU) return host();
  if (Allocator* a = find_allocator(device)) return *a;
  throw NotImplementedError(std::string("[") + op + "] device " + device.str() +
                            " is not available in this build; only cpu is");
}

void* allocate(size_t nbytes) { return host().allocate(nbytes); }
void deallocate(void* ptr, size_t nbytes) { host().deallocate(ptr, nbytes); }
MemoryStats memory_stats() { return host().stats(); }
void reset_peak_memory_stats() { host().reset_peak_stats(); }
void empty_cache() { host().empty_cache(); }
size_t cache_limit() { return host().cache_limit(); }
void set_cache_limit(size_t bytes) { host().set_cache_limit(bytes); }

}  // namespace kiln
