// `kiln finetune ...` and `kiln vae ...` live in Python (kiln.finetune, kiln.vae); the
// CLI hands the command line to `python -m kiln.<module>`.
#pragma once

namespace kiln::cli {

// When argv[1] is "finetune" or "vae", replaces this process with the Python next to
// the kiln executable (else python3 on PATH) running `-m kiln.<argv[1]> argv[2:]`;
// returns only when that failed (the exit status to use), or -1 for any other command.
int maybe_exec_python_command(int argc, char** argv);

}  // namespace kiln::cli
