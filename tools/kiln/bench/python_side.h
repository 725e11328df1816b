// The Python half of a bench command: runs `<python> -m kiln.bench <args>
// --json` and returns its JSON object, so one `kiln bench` invocation can show
// the Python-side figures (and the peers only Python can reach, e.g. torch)
// beside the C++ ones.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kiln::cli::bench {

// The interpreter to use: `explicit_path` when given, else a `python` (or
// `python3`) next to the running kiln binary (pip installs kiln into a
// venv's bin/); "" when there is none.
std::string find_python(const std::string& explicit_path);

struct PythonRun {
  bool ok = false;
  std::string why;  // when !ok: what went wrong, one line
  nlohmann::json doc;
};

// Runs the Python source `script` under `python` with `input` as JSON on
// stdin and parses the JSON it prints. `who` names the script in errors
// ("bad JSON from the <who>"). A failure is reported in `why`, never thrown.
PythonRun run_python_script(const std::string& python, const std::string& script, const nlohmann::json& input,
                            const std::string& who);

// s as one shell word: in single quotes, each ' written as '\''.
std::string shell_quoted(const std::string& s);

// Runs `python -m <module> <args> --json` and parses its stdout (a JSON object
// with a "results" list).
PythonRun run_python_module(const std::string& python, const std::string& module, const std::string& args);

// Runs `python -m kiln.bench <args> --json` and parses its stdout.
inline PythonRun run_python_bench(const std::string& python, const std::string& args) {
  return run_python_module(python, "kiln.bench", args);
}

// Draws `doc` (a bench command's JSON) into the PNG `out_png` with
// `python -m kiln.bench_plot` (matplotlib). Returns "" on success, else why not.
std::string plot_with_python(const std::string& python, const nlohmann::json& doc, const std::string& out_png);

}  // namespace kiln::cli::bench
