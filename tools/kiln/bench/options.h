// The options every `kiln bench X` shares (--json, --out, --repeat, --warmup,
// --quick), defined once so that their names, checks and help read alike; a
// command states only where its defaults differ. Each command's options struct
// derives from CommonOptions, so its code reads opt.json, opt.repeat, ...
#pragma once

#include <string>

#include "bench/harness.h"

namespace CLI {
class App;
}

namespace kiln::cli::bench {

struct CommonOptions {
  bool json = false;
  std::string out;     // also write the JSON object here ("": don't)
  int repeat = 0;      // timed repetitions per case, once the command line has parsed
  int warmup = 0;      // untimed calls before timing (commands without --warmup leave it 0)
  bool quick = false;  // tiny sizes: checks that the plumbing works, not speed

  Options runner_options() const { return Options{repeat, warmup, quick}; }
};

// Where a command's common options differ from the usual ones.
struct CommonDefaults {
  int repeat = 10;
  // --repeat under --quick when --repeat is not given; 0: --quick leaves it
  // alone (the command then caps it itself, as its --quick help says).
  int quick_repeat = 3;
  int max_repeat = 100000;
  int warmup = 2;  // -1: the command has no --warmup
  int max_warmup = 100000;
  bool out = true;                    // false: no --out
  const char* timed = "repetitions";  // what one --repeat counts
  const char* untimed = "calls";      // what one --warmup counts
  const char* quick_help = "Tiny sizes and few repeats: a smoke run, not a measurement";
};

// Adds --json, --out, --repeat, --warmup and --quick to `app` (those `d` keeps)
// and sets opt's defaults from `d`. After parsing, a --quick run without
// --repeat gets d.quick_repeat repetitions. opt must outlive the parse.
void add_common_options(CLI::App& app, CommonOptions& opt, const CommonDefaults& d = {});

}  // namespace kiln::cli::bench
