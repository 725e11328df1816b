// PyTorch as the side-by-side peer of `kiln bench conv`: a script run under
// --peer-python that builds the same cases from the same JSON specs (conv
// forward / backward in either memory format, group_norm, interpolate, pad,
// dropout) and times them with the same rule as kiln's side (a read of the
// roof buffer's size before each timed call, memory-bound inputs rotated).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/python_side.h"

namespace kiln::cli {

// config: {"cases": [{"name", "spec", "copies"}], "repeat", "warmup",
// "threads", "flush_mb"}. The result is {ok, why, doc}, doc as
// run_torch_peer's: {"torch_version", "threads", "results": [{name, median_s,
// min_s, max_s}]}. Never throws: a failure is ok = false with why.
bench::PythonRun run_conv_torch_peer(const std::string& python, const nlohmann::json& config);

}  // namespace kiln::cli
