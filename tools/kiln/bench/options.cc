#include "bench/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>

namespace kiln::cli::bench {

void add_common_options(CLI::App& app, CommonOptions& opt, const CommonDefaults& d) {
  opt.repeat = d.repeat;
  opt.warmup = std::max(d.warmup, 0);
  app.add_flag("--json", opt.json, "Print one JSON object instead of the table");
  if (d.out) app.add_option("--out", opt.out, "Also write the JSON object to FILE")->type_name("FILE");
  std::string repeat_help =
      std::string("Timed ") + d.timed + " per case, median reported (default " + std::to_string(d.repeat);
  if (d.quick_repeat > 0) repeat_help += ", " + std::to_string(d.quick_repeat) + " with --quick";
  CLI::Option* repeat = app.add_option("--repeat", opt.repeat, repeat_help + ")");
  repeat->check(CLI::Range(1, d.max_repeat));
  if (d.warmup >= 0)
    app.add_option(
           "--warmup", opt.warmup,
           std::string("Untimed ") + d.untimed + " before timing (default " + std::to_string(d.warmup) + ")")
        ->check(CLI::Range(0, d.max_warmup));
  app.add_flag("--quick", opt.quick, d.quick_help);
  if (d.quick_repeat > 0)
    app.final_callback([&opt, repeat, quick_repeat = d.quick_repeat] {
      if (opt.quick && repeat->count() == 0) opt.repeat = quick_repeat;
    });
}

}  // namespace kiln::cli::bench
