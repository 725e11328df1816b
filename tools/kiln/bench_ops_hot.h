// The "hot functions" of the PyTorch API for `kiln bench ops`
// (bench_ops_hot.cc): cat/stack/split, where, repeat/flip/roll, tril/triu,
// scans, nan-reductions, sorting/searching and special functions. Each is timed on kiln here and
// handed to the torch peer (bench_torch_peer.cc, kind "op") with the same
// inputs, the same rotation of input copies and the same flush before each
// timed call, so one run gives kiln GB/s, fraction of the read roof and
// speedup vs torch side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/harness.h"

namespace kiln::cli {

struct HotRun {
  int64_t n = 0;       // elements of the memory-bound cases' main tensor (--numel)
  bool quick = false;  // --quick: tiny sizes, one input copy
  std::string filter;  // run only the cases whose name contains this
  // The rotation for a memory-bound case: per_copy input bytes, `shared`
  // output bytes (bench_ops.cc's rule, capped by free memory).
  std::function<bench::Rotation(double per_copy, double shared)> rotation;
  // Takes each result once its inputs are freed (bench_ops.cc: append to the
  // results, hand the buffers back, print progress).
  std::function<void(const bench::Result&)> record;
};

// Times the hot cases on kiln (results through run.record, each tagged
// extra.group = "hot") and returns the torch peer's cases, [{name, kind "op",
// inputs: [{shape, fill}], expr, copies}], for bench::add_torch_peer.
nlohmann::json run_hot_cases(bench::Runner& runner, const HotRun& run);

// The geometric mean of speedup_vs_torch over the hot results that have one;
// *count gets how many did (0: the result is 0).
double hot_geomean_speedup(const nlohmann::json& results, int* count);

}  // namespace kiln::cli
