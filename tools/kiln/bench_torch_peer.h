// PyTorch as a side-by-side peer for the nn benches: runs a small script under
// a user-named Python that has torch (--peer-python PATH), feeding it the cases
// as JSON on stdin and reading {"torch_version", "results": [{name, median_s,
// min_s, max_s}]} back. Each timed torch call follows a pass over a buffer
// larger than the LLC, as kiln's calls follow a roof pass. A missing python or
// torch is a missing column, never a failure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/python_side.h"

namespace kiln::cli {

using TorchPeer = bench::PythonRun;  // {ok, why (one line when !ok), doc (the script's JSON)}

// config: {"cases": [...], "repeat", "warmup", "threads", "flush_mb"}; each case
// has "name" and "kind" ("softmax" | "attention" | "sample" | "op") and its
// sizes; an "op" case has "inputs" ([{shape, fill}]), "expr" (a Python
// expression over x, the list of inputs) and "copies".
TorchPeer run_torch_peer(const std::string& python, const nlohmann::json& config);

// Adds peer_median_s / speedup_vs_torch to the results whose name the peer timed.
void merge_torch_peer(nlohmann::json& results, const TorchPeer& peer);

}  // namespace kiln::cli
