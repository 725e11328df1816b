#include "finetune.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::cli {

int maybe_exec_python_command(int argc, char** argv) {
  if (argc < 2) return -1;
  // kiln <command> -> python -m <module>
  static constexpr const char* kCommands[][2] = {{"finetune", "kiln.finetune"}, {"vae", "kiln.vae"}};
  const char* module = nullptr;
  for (const auto& c : kCommands)
    if (std::strcmp(argv[1], c[0]) == 0) module = c[1];
  if (module == nullptr) return -1;
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
  std::string m = "-m", mod = module;
  args.push_back(nullptr);  // the interpreter, filled in below
  args.push_back(m.data());
  args.push_back(mod.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  for (auto& py : pythons) {
    args[0] = py.data();
    ::execvp(py.c_str(), args.data());  // returns only on failure
  }
  std::fprintf(stderr, "kiln %s: could not run python3 -m %s: %s\n", argv[1], module, std::strerror(errno));
  return 127;
}

}  // namespace kiln::cli
