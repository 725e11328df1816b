// The common tail of the nn bench commands (softmax, attention, sample): the
// torch column from the peer script, and the report (JSON to --out and stdout,
// or the table with its not-measured lines).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kiln::cli::bench {

// Runs the torch peer (kiln/bench_torch_peer.h) with `config` when peer_python
// is set and merges its medians into `results`. Returns the document's "peers"
// entry ({torch, threads, python}), or null with the reason appended to
// `missing`.
nlohmann::json add_torch_peer(const std::string& peer_python, const nlohmann::json& config,
                              nlohmann::json& results, nlohmann::json& missing);

// Writes doc to out_path when set; then prints doc as JSON (as_json), or the
// header line, the table of doc["results"], after_table and one line per entry
// of doc["missing"].
void emit_report(const nlohmann::json& doc, const std::string& out_path, bool as_json,
                 const std::string& header, const std::string& after_table = "");

}  // namespace kiln::cli::bench
