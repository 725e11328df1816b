#include "bench/report.h"

#include <cstdio>
#include <fstream>

#include "bench/harness.h"
#include "bench_torch_peer.h"
#include "cli_io.h"

namespace kiln::cli::bench {

json add_torch_peer(const std::string& peer_python, const json& config, json& results, json& missing) {
  if (peer_python.empty()) {
    missing.push_back({{"name", "torch peer"}, {"why", "pass --peer-python PATH (a Python with torch)"}});
    return nullptr;
  }
  const TorchPeer peer = run_torch_peer(peer_python, config);
  if (!peer.ok) {
    missing.push_back({{"name", "torch peer"}, {"why", peer.why}});
    return nullptr;
  }
  merge_torch_peer(results, peer);
  return {{"torch", peer.doc["torch_version"]}, {"threads", peer.doc["threads"]}, {"python", peer_python}};
}

void emit_report(const json& doc, const std::string& out_path, bool as_json, const std::string& header,
                 const std::string& after_table) {
  if (!out_path.empty()) write_file(out_path, doc.dump(2) + "\n");
  if (as_json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return;
  }
  std::printf("%s\n\n", header.c_str());
  std::fputs(format_table(doc["results"]).c_str(), stdout);
  std::fputs(after_table.c_str(), stdout);
  if (doc.contains("missing"))
    for (const json& mi : doc["missing"])
      std::printf("  not measured: %s (%s)\n", mi["name"].get<std::string>().c_str(),
                  mi["why"].get<std::string>().c_str());
}

}  // namespace kiln::cli::bench
