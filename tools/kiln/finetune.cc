#include "finetune.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::cli {

int maybe_exec_finetune(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "finetune") != 0) return -1;
  std::vector<std::string> pythons;
  // An installed kiln sits in a venv's bin/ next to its python: use that one.
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.resize(dir.rfind('/') + 1);
    for (const char* name : {"python3", "python"})
      if (::access((dir + name).c_str(), X_OK) == 0) pythons.push_back(dir + name);
  }
  pythons.push_back("python3");
  std::vector<char*> args;
  std::string m = "-m", mod = "kiln.finetune";
  args.push_back(nullptr);  // the interpreter, filled in below
  args.push_back(m.data());
  args.push_back(mod.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  for (auto& py : pythons) {
    args[0] = py.data();
    ::execvp(py.c_str(), args.data());  // returns only on failure
  }
  std::fprintf(stderr, "kiln finetune: could not run python3 -m kiln.finetune: %s\n", std::strerror(errno));
  return 127;
}

}  // namespace kiln::cli
