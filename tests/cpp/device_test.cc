// Devices: parsing and printing, the allocator per device, Tensor::device()
// and to(Device), and the same-device check op front-ends apply.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/device_check.h"
#include "op_table/second_device.h"
#include "kiln/kiln.h"

using namespace kiln;
using op_table::SecondDevice;

namespace {

// The message of the exception `f` throws as E ("" when it throws nothing).
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// A tensor over host memory whose storage claims `device`: how a test shows
// what ops do with a tensor from a device this build lacks.
Tensor claimed_on(Device device, std::vector<float>& host) {
  auto storage =
      std::make_shared<Storage>(host.data(), host.size() * sizeof(float), std::function<void()>{}, device);
  const int64_t n = int64_t(host.size());
  const int64_t shape[] = {n}, strides[] = {1};
  return Tensor(storage, DType::Float32, shape, strides, 0);
}

}  // namespace

TEST(Device, ParsesAndPrintsAsTorch) {
  struct Case {
    const char* text;
    DeviceKind kind;
    int index;
  };
  for (const Case& c : {Case{"cpu", DeviceKind::CPU, -1}, Case{"cpu:0", DeviceKind::CPU, 0},
                        Case{"cuda", DeviceKind::CUDA, -1}, Case{"cuda:0", DeviceKind::CUDA, 0},
                        Case{"cuda:1", DeviceKind::CUDA, 1}, Case{"cuda:17", DeviceKind::CUDA, 17}}) {
    const Device d = Device::parse(c.text);
    EXPECT_EQ(d.kind, c.kind) << c.text;
    EXPECT_EQ(d.index, c.index) << c.text;
    EXPECT_EQ(d.has_index(), c.index >= 0) << c.text;
    EXPECT_EQ(d.str(), c.text);
  }
  EXPECT_EQ(Device{}.str(), "cpu");
  EXPECT_TRUE(Device{}.is_cpu());
  EXPECT_TRUE(Device::parse("cuda:2").is_cuda());
  EXPECT_STREQ(device_kind_name(DeviceKind::CUDA), "cuda");
}

TEST(Device, BadStringsNameTheOpAndTheText) {
  for (const char* bad : {"gpu", "", "CUDA", " cpu", "cpu ", "cuda:", "cuda:x", "cuda:-1", "cuda:+1",
                          "cuda:01", "cuda:1:2", "cuda:1.0", "cuda:99999999999", "mps"}) {
    const std::string msg = message_of<ValueError>([&] { Device::parse(bad, "to"); });
    EXPECT_EQ(msg.rfind("[to] ", 0), 0u) << bad << ": " << msg;
    std::string quoted = "'";
    quoted.append(bad).push_back('\'');
    EXPECT_NE(msg.find(quoted), std::string::npos) << msg;
  }
  // torch: "CPU device index must be -1 or zero"
  EXPECT_EQ(message_of<ValueError>([] { Device::parse("cpu:1"); }),
            "[device] CPU device index must be 0 (or none), got 1");
  EXPECT_EQ(message_of<ValueError>([] { Device::make(DeviceKind::CUDA, -2); }),
            "[device] device index must not be negative, got -2");
  EXPECT_EQ(Device::make(DeviceKind::CUDA, 3), (Device{DeviceKind::CUDA, 3}));
}

TEST(Device, EqualityKeepsTheIndexSameDeviceDoesNot) {
  // == is torch.device's ==: kind and index (None differs from 0).
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceKind::CUDA, 1}));
  EXPECT_NE(Device::parse("cuda"), Device::parse("cuda:0"));
  EXPECT_NE(Device::parse("cpu"), Device::parse("cpu:0"));
  EXPECT_NE(Device::parse("cpu"), Device::parse("cuda"));
  // same_device is "the same memory": "cuda" is the current device, cuda:0.
  EXPECT_TRUE(same_device(Device::parse("cpu"), Device::parse("cpu:0")));
  EXPECT_TRUE(same_device(Device::parse("cuda"), Device::parse("cuda:0")));
  EXPECT_FALSE(same_device(Device::parse("cuda"), Device::parse("cuda:1")));
  EXPECT_FALSE(same_device(Device::parse("cpu"), Device::parse("cuda:0")));
}

TEST(Device, OneAllocatorPerDevice) {
  Allocator& cpu = allocator_for(Device{});
  EXPECT_EQ(&cpu, &cpu_allocator());
  EXPECT_EQ(&allocator_for(Device::parse("cpu:0")), &cpu);
  EXPECT_EQ(cpu.device(), Device{});
  EXPECT_TRUE(device_available(Device{}));
  EXPECT_FALSE(device_available(Device::parse("cuda:0")));
  EXPECT_EQ(message_of<NotImplementedError>([] { allocator_for(Device::parse("cuda:0"), "empty"); }),
            "[empty] device cuda:0 is not available in this build; only cpu is");
  EXPECT_EQ(message_of<NotImplementedError>([] { allocator_for(Device::parse("cuda")); }),
            "[allocator_for] device cuda is not available in this build; only cpu is");

  // The free functions are the CPU allocator's: one set of statistics.
  const MemoryStats before = memory_stats();
  void* p = cpu.allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(memory_stats().alloc_count, before.alloc_count + 1);
  EXPECT_EQ(cpu.stats().current_bytes, memory_stats().current_bytes);
  EXPECT_GE(memory_stats().current_bytes, before.current_bytes + 1000);
  deallocate(p, 1000);
  EXPECT_EQ(cpu.stats().current_bytes, before.current_bytes);
  EXPECT_EQ(cpu.cache_limit(), cache_limit());
}

TEST(Device, StorageAllocatesOnItsDevice) {
  Storage host(256, Device::parse("cpu:0"));
  EXPECT_EQ(host.device(), Device{});  // a CPU storage has no index, as torch
  EXPECT_NE(host.data(), nullptr);
  EXPECT_EQ(message_of<NotImplementedError>([] { Storage s(256, Device::parse("cuda:1")); }),
            "[empty] device cuda:1 is not available in this build; only cpu is");
  // External memory keeps the device it is said to live on; "cuda" is cuda:0.
  float x = 0;
  EXPECT_EQ(Storage(&x, sizeof x, {}, Device::parse("cuda")).device(), Device::parse("cuda:0"));
  EXPECT_EQ(Storage(&x, sizeof x, {}, Device::parse("cuda:2")).device(), Device::parse("cuda:2"));
  EXPECT_EQ(Storage(&x, sizeof x, {}).device(), Device{});
}

TEST(Device, TensorAnswersItsStoragesDevice) {
  EXPECT_EQ(empty({2, 3}).device(), Device{});
  EXPECT_EQ(empty({2, 3}).device().str(), "cpu");
  float buf[4] = {};
  EXPECT_EQ(from_blob(buf, {4}, {1}, DType::Float32).device(), Device{});
  std::vector<float> host(4, 1.0f);
  const Tensor c = claimed_on(Device::parse("cuda:1"), host);
  EXPECT_EQ(c.device(), Device::parse("cuda:1"));
  EXPECT_EQ(c.narrow(0, 1, 2).device(), Device::parse("cuda:1"));  // views share it
}

TEST(Device, ToSameDeviceIsTheTensorItself) {
  const Tensor t = arange(Scalar(int64_t(0)), Scalar(int64_t(6))).view({2, 3});
  for (const char* d : {"cpu", "cpu:0"}) {
    const Tensor r = t.to(Device::parse(d));
    EXPECT_EQ(r.storage(), t.storage()) << d;
    EXPECT_EQ(r.data_ptr(), t.data_ptr());
    EXPECT_EQ(r.sizes(), t.sizes());
  }
  EXPECT_EQ(t.cpu().storage(), t.storage());
  EXPECT_EQ(message_of<NotImplementedError>([&] { t.to(Device::parse("cuda")); }),
            "[to] device cuda is not available in this build; only cpu is");
  // A tensor on a device this build lacks cannot be read back either.
  std::vector<float> host(3, 2.0f);
  const Tensor c = claimed_on(Device::parse("cuda:0"), host);
  EXPECT_EQ(message_of<NotImplementedError>([&] { c.cpu(); }),
            "[to] device cuda:0 is not available in this build; only cpu is");
  EXPECT_EQ(c.to(Device::parse("cuda")).storage(), c.storage());
}

TEST(Device, CheckSameDeviceNamesBothDevices) {
  std::vector<float> h0(3, 1.0f), h1(3, 1.0f);
  const Tensor cpu = ones({3});
  const Tensor cuda0 = claimed_on(Device::parse("cuda:0"), h0);
  const Tensor cuda1 = claimed_on(Device::parse("cuda:1"), h1);
  EXPECT_NO_THROW(check_same_device("add", cpu, cpu.view({1, 3}), ones({2})));
  EXPECT_NO_THROW(check_same_device("add", cuda0, cuda0));
  EXPECT_NO_THROW(check_same_device("add", cpu));
  EXPECT_EQ(message_of<Error>([&] { check_same_device("add", cpu, cuda0); }),
            "[add] expected all tensors on the same device, got cpu and cuda:0");
  EXPECT_EQ(message_of<Error>([&] { check_same_device("linear", cuda0, cpu, cpu); }),
            "[linear] expected all tensors on the same device, got cuda:0 and cpu");
  EXPECT_EQ(message_of<Error>([&] { check_same_device("mul", cuda0, cuda1); }),
            "[mul] expected all tensors on the same device, got cuda:0 and cuda:1");
  // An absent optional argument (undefined tensor) is not a device.
  EXPECT_NO_THROW(check_same_device("linear", Tensor(), cpu, Tensor()));
  EXPECT_EQ(message_of<Error>([&] { check_same_device("linear", Tensor(), cpu, cuda1); }),
            "[linear] expected all tensors on the same device, got cpu and cuda:1");
  // Not one of the narrower kinds: Python sees RuntimeError, as torch raises.
  try {
    check_same_device("add", cpu, cuda0);
    FAIL() << "no throw";
  } catch (const ValueError&) {
    FAIL() << "a ValueError";
  } catch (const Error&) {
  }

  const std::vector<Tensor> list = {Tensor(), cpu, cpu, cuda0};
  EXPECT_EQ(message_of<Error>([&] { check_same_device_list("cat", list); }),
            "[cat] expected all tensors on the same device, got cpu and cuda:0");
  EXPECT_NO_THROW(check_same_device_list("cat", std::vector<Tensor>{cpu, Tensor(), cpu}));
  EXPECT_NO_THROW(check_same_device_list("cat", std::vector<Tensor>{}));
}

// Ops dispatch through the registry by their tensors' device: two devices in
// one call name both; a device whose kernel this build lacks says so.
TEST(Device, OpsDispatchByTheTensorsDevice) {
  std::vector<float> host(6, 0.5f);
  const Tensor on_cuda = claimed_on(Device::parse("cuda:0"), host);
  const Tensor x = ones({6});
  try {
    softmax_out(x, 0, on_cuda);
    FAIL() << "softmax_out across devices did not raise";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[softmax] expected all tensors on the same device, got cpu and cuda:0");
  }
  // Without the device's memory the output cannot even be allocated.
  EXPECT_EQ(message_of<NotImplementedError>([&] { (void)kiln::exp(on_cuda); }),
            "[empty] device cuda:0 is not available in this build; only cpu is");
  // With memory but no kernels (a backend that has not registered exp yet).
  op_table::SecondDevice memory_only(/*with_kernels=*/false);
  EXPECT_EQ(message_of<NotImplementedError>([&] { (void)kiln::exp(on_cuda); }),
            "[exp] has no kernel for device cuda:0 in this build");
}

// A second device (host memory standing in for cuda:0, the CPU kernels
// registered as its kernels): tensors move there and back, and every op's
// output lands on its inputs' device.
TEST(Device, TensorsMoveToASecondDeviceAndOpsRunThere) {
  const Tensor x = arange(Scalar(int64_t(0)), Scalar(int64_t(6))).to(DType::Float32).view({2, 3});
  EXPECT_EQ(message_of<NotImplementedError>([&] { x.to(SecondDevice::kDevice); }),
            "[to] device cuda:0 is not available in this build; only cpu is");
  op_table::SecondDevice second(/*with_kernels=*/true);
  const uint64_t before = second.allocations();
  const Tensor d = x.t().to(Device::parse("cuda"));  // a transposed view: copied contiguous
  EXPECT_EQ(d.device(), Device::parse("cuda:0"));
  EXPECT_EQ(second.allocations(), before + 1);
  EXPECT_EQ(d.sizes(), (Shape{3, 2}));
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d.to(Device::parse("cuda:0")).storage(), d.storage());

  const Tensor e = kiln::exp(d);
  EXPECT_EQ(e.device(), SecondDevice::kDevice);
  const Tensor back = e.cpu();
  EXPECT_EQ(back.device(), Device{});
  const Tensor want = kiln::exp(x.t().contiguous());  // the same (contiguous) kernel path
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(back.select(0, i).select(0, j).item<float>(), want.select(0, i).select(0, j).item<float>());

  // Copies, casts and reductions stay on the device; item() reads through the host.
  EXPECT_EQ(d.clone().device(), SecondDevice::kDevice);
  EXPECT_EQ(d.to(DType::Float64).device(), SecondDevice::kDevice);
  const Tensor s = kiln::sum(d);
  EXPECT_EQ(s.device(), SecondDevice::kDevice);
  EXPECT_EQ(s.item<double>(), 15.0);
  EXPECT_EQ(kiln::add(d, 1.0).device(), SecondDevice::kDevice);
  EXPECT_EQ(kiln::matmul(d, d.t()).device(), SecondDevice::kDevice);
  EXPECT_EQ(zeros_like(d).device(), SecondDevice::kDevice);
  EXPECT_EQ(zeros({2}, DType::Int32, SecondDevice::kDevice).device(), SecondDevice::kDevice);

  // copy_ between the devices, both ways, converting the dtype on the way.
  Tensor host = zeros({3, 2}, DType::Float64);
  host.copy_(d);
  EXPECT_EQ(host.select(0, 2).select(0, 1).item<double>(), 5.0);
  Tensor dev = zeros({3, 2}, DType::Float32, SecondDevice::kDevice);
  dev.copy_(host.t().t());
  EXPECT_EQ(dev.select(0, 1).select(0, 0).item<double>(), 1.0);

  // Mixing devices in one op names both.
  EXPECT_EQ(message_of<Error>([&] { (void)kiln::add(d, x.t()); }),
            "[add] expected all tensors on the same device, got cuda:0 and cpu");
  EXPECT_EQ(message_of<Error>([&] { (void)kiln::matmul(x, d); }),
            "[matmul] expected all tensors on the same device, got cpu and cuda:0");
}
