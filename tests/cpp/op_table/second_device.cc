#include "op_table/second_device.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kiln/error.h"
#include "ops/registry/all.h"

namespace op_table {
namespace {

using kiln::Allocator;
using kiln::Device;
using kiln::MemoryStats;

// Plain aligned host blocks, no cache: every tensor is a fresh allocation.
class HostBackedAllocator final : public Allocator {
 public:
  Device device() const override { return SecondDevice::kDevice; }
  void* allocate(size_t nbytes) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(nbytes, 1) + 63) / 64 * 64);
    if (!p) throw kiln::OutOfMemoryError("[allocate] second device: out of memory", nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.current_bytes += nbytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
    stats_.reserved_bytes = stats_.current_bytes;
    ++stats_.alloc_count;
    return p;
  }
  void deallocate(void* ptr, size_t nbytes) override {
    std::free(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.current_bytes -= nbytes;
    stats_.reserved_bytes = stats_.current_bytes;
  }
  MemoryStats stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes = stats_.current_bytes;
  }
  void empty_cache() override {}
  size_t cache_limit() override { return 0; }
  void set_cache_limit(size_t) override {}

 private:
  std::mutex mu_;
  MemoryStats stats_;
};

// Never destroyed: tensors allocated on it may outlive a SecondDevice.
HostBackedAllocator& allocator() {
  static HostBackedAllocator* a = new HostBackedAllocator();
  return *a;
}

Allocator* lookup(Device d) { return d.index == 0 ? &allocator() : nullptr; }

uint64_t base_count = 0;

}  // namespace

SecondDevice::SecondDevice(bool with_kernels) : with_kernels_(with_kernels) {
  base_count = allocator().stats().alloc_count;
  kiln::register_device_allocators(kiln::DeviceKind::CUDA, lookup);
  if (with_kernels_)
    for (const kiln::ops::OpInfo& op : kiln::ops::all_ops())
      op.share_kernel(kiln::DeviceKind::CUDA, kiln::DeviceKind::CPU);
}

SecondDevice::~SecondDevice() {
  if (with_kernels_)
    for (const kiln::ops::OpInfo& op : kiln::ops::all_ops()) op.clear_kernel(kiln::DeviceKind::CUDA);
  kiln::register_device_allocators(kiln::DeviceKind::CUDA, nullptr);
}

uint64_t SecondDevice::allocations() const { return allocator().stats().alloc_count - base_count; }

}  // namespace op_table
