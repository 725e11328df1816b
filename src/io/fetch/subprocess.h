// Running a helper program (pip, python) without a shell.
#pragma once

#include <string>
#include <vector>

namespace kiln::llm::detail {

struct ProcessResult {
  int status = -1;     // exit status; 128 + signal when killed; -1 when it could not start
  std::string output;  // stdout + stderr when captured
  std::string error;   // why it could not start
};

// Runs argv (argv[0] looked up on PATH when it has no '/'). capture: collect the
// child's stdout and stderr; otherwise both go to this process's stderr, so a
// terminal shows pip's own progress bar and stdout stays clean for model text.
ProcessResult run_process(const std::vector<std::string>& argv, bool capture);

}  // namespace kiln::llm::detail
