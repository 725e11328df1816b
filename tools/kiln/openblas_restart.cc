#include "openblas_restart.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/blas_env.h"

namespace kiln::cli {

void maybe_restart_for_openblas() {
  if (!linalg::openblas_core_misdetected()) return;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t i = 0; i < all.size();) {
    const size_t e = all.find('\0', i);
    args.push_back(all.substr(i, e == std::string::npos ? std::string::npos : e - i));
    if (e == std::string::npos) break;
    i = e + 1;
  }
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("OPENBLAS_CORETYPE", linalg::preferred_openblas_core(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv.data());
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace kiln::cli
