// `kiln finetune ...`: LoRA fine-tuning lives in Python (kiln.finetune); the CLI
// hands the command line to `python -m kiln.finetune`.
#pragma once

namespace kiln::cli {

// When argv[1] is "finetune", replaces this process with the Python next to the
// kiln executable (else python3 on PATH) running `-m kiln.finetune argv[2:]`;
// returns only when that failed (the exit status to use), or -1 for any other command.
int maybe_exec_finetune(int argc, char** argv);

}  // namespace kiln::cli
