// The range and random factories' trailing device argument: the output is
// allocated on that device and the op runs there. This build has only the
// CPU, so a CUDA device raises as every allocation on it does, naming the
// device as given.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kiln/kiln.h"

namespace {

using namespace kiln;

struct Factory {
  const char* op;
  std::function<Tensor(Device)> make;
};

std::vector<Factory> factories() {
  return {
      {"arange",
       [](Device d) {
         return arange(Scalar(int64_t(0)), Scalar(int64_t(5)), Scalar(int64_t(1)), DType::Int64, d);
       }},
      {"linspace", [](Device d) { return linspace(0.0, 1.0, 5, DType::Float32, d); }},
      {"logspace", [](Device d) { return logspace(0.0, 1.0, 5, 10.0, DType::Float32, d); }},
      {"eye", [](Device d) { return eye(3, 4, DType::Float32, d); }},
      {"rand",
       [](Device d) {
         Generator g(3);
         return rand({5}, DType::Float32, &g, d);
       }},
      {"randn",
       [](Device d) {
         Generator g(3);
         return randn({5}, DType::Float32, &g, d);
       }},
      {"randint",
       [](Device d) {
         Generator g(3);
         return randint(0, 9, {5}, DType::Int64, &g, d);
       }},
  };
}

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

TEST(FactoryDevice, CpuDevicesGiveTheDefaultResult) {
  for (const Factory& f : factories()) {
    const Tensor base = f.make(Device{});
    for (Device d : {Device::parse("cpu"), Device::parse("cpu:0")}) {
      const Tensor t = f.make(d);
      EXPECT_TRUE(t.device() == Device{}) << f.op << " on " << d.str();
      EXPECT_EQ(values(t), values(base)) << f.op << " on " << d.str();
    }
  }
}

TEST(FactoryDevice, CudaIsNotAvailableInThisBuild) {
  for (const Factory& f : factories()) {
    for (const char* name : {"cuda", "cuda:0", "cuda:1"}) {
      const Device d = Device::parse(name);
      const std::string want =
          std::string("[") + f.op + "] device " + d.str() + " is not available in this build; only cpu is";
      try {
        f.make(d);
        ADD_FAILURE() << f.op << " on " << name << " returned";
      } catch (const NotImplementedError& e) {
        EXPECT_EQ(std::string(e.what()), want) << f.op << " on " << name;
      }
    }
  }
}

// The device is checked before the generator reserves counters: a refused
// draw leaves the stream where it was.
TEST(FactoryDevice, RefusedDrawTakesNoCounters) {
  Generator a(11), b(11);
  EXPECT_THROW(rand({100}, DType::Float32, &a, Device::parse("cuda")), NotImplementedError);
  EXPECT_THROW(randint(0, 5, {100}, DType::Int64, &a, Device::parse("cuda")), NotImplementedError);
  EXPECT_EQ(values(rand({7}, DType::Float32, &a)), values(rand({7}, DType::Float32, &b)));
}

}  // namespace
