// The shared harness for `kiln bench ...` (bench/README.md, "How the read roof
// is measured"): warm up, repeat, take the median; interleave a pass of the
// read roof with every timed repetition so each memory-bound case is judged
// against the bandwidth the machine had at that moment; rotate over copies of
// the inputs so the working set is at least 4x the last-level cache.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bandwidth.h"
#include "kiln/sysinfo.h"

namespace kiln::cli::bench {

using json = nlohmann::json;

struct Options {
  int repeat = 10;
  int warmup = 2;
  bool quick = false;  // tiny sizes: checks that the plumbing works, not speed
};

// How many copies of the inputs a case cycles through.
struct Rotation {
  int copies = 1;
  double working_set_bytes = 0;  // copies * per-copy bytes + shared bytes
  int64_t llc_bytes = 0;
  double x_llc() const { return llc_bytes > 0 ? working_set_bytes / double(llc_bytes) : 0.0; }
  json to_json() const;
};

// The fewest copies of `per_copy_bytes` (the inputs of one call) that, with
// `shared_bytes` touched by every call (an output block the allocator hands
// back each time), make a working set of at least 4x the LLC; at most
// max_copies.
Rotation plan_rotation(double per_copy_bytes, double shared_bytes, int max_copies = 64);

struct Result {
  std::string name;
  std::string unit;                           // "GB/s" for memory-bound cases, "ns/call" for latency
  double median_s = 0, min_s = 0, max_s = 0;  // per call
  int repeat = 0;
  double bytes = 0;  // bytes one call must move; 0 when not memory-bound
  double gbps = 0;
  double roof_gbps = 0;  // best of the roof passes interleaved with this case
  double roof_fraction = 0;
  json extra = json::object();  // case details: numel, dtypes, rotation, ...
  json to_json() const;
};

class Runner {
 public:
  Runner(const sys::ReadRoof& roof, Options opt) : roof_(roof), opt_(opt) {}

  // fn(i) performs call i; i % rotation.copies picks the inputs. `bytes` is
  // what one call must read plus write. Each repetition times `calls`
  // consecutive calls (each on the next copy, so each still reads cold
  // inputs) and reports the time per call: a run of small layers, as in
  // decoding, rather than one call with cold code and thread pool.
  // One untimed call goes right before the timed ones. With `warm` it is on
  // the same inputs (rot.copies should then be 1): they sit in cache, as
  // logits do when the layer that wrote them has just run. Otherwise it is on
  // the next copy (when there are two or more), so the timed calls follow
  // the kernel's own work rather than the roof pass.
  Result memory_case(const std::string& name, double bytes, const Rotation& rot,
                     const std::function<void(int)>& fn, int calls = 1, bool warm = false);
  // Times batches of `calls` calls of fn; the result is per call.
  Result latency_case(const std::string& name, int calls, const std::function<void()>& fn);
  // The same for several cases whose ratios matter, interleaved: each
  // repetition times every case in turn, so the machine's drift (this VM's
  // compute speed moved 1.4x within minutes) hits all of them alike.
  struct Latency {
    std::string name;
    std::function<void()> fn;
    // Untimed sleep after each sample: for a peer whose threads keep
    // spinning after a call (OpenBLAS's: ~0.1 s), so the next case runs on
    // free cores.
    double settle_s = 0;
  };
  std::vector<Result> latency_cases(const std::vector<Latency>& cases, int calls);

  // Every roof pass taken so far, over the whole run.
  sys::RoofStats roof_stats() const;
  const Options& options() const { return opt_; }

 private:
  const sys::ReadRoof& roof_;
  Options opt_;
  std::vector<double> roof_samples_;
};

double now_s();

// {cpu_model, logical_cores, threads, simd_target, l1d/l2/l3 bytes, roof}.
json machine_json(const sys::RoofStats& roof);

// The human table for a results list (entries as Result::to_json writes them,
// or as the Python side writes them).
std::string format_table(const json& results);

}  // namespace kiln::cli::bench
