#include "bench/python_side.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kiln::cli::bench {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string find_python(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const char* name : {"python", "python3"}) {
    const std::filesystem::path p = self.parent_path() / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

PythonRun run_python_script(const std::string& python, const std::string& script_text,
                            const nlohmann::json& input, const std::string& who) {
  PythonRun r;
  char dir[] = "/tmp/kiln-script-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    r.why = "cannot create a temporary directory";
    return r;
  }
  const std::string d(dir), script = d + "/peer.py", in = d + "/in.json", out = d + "/out.json",
                            err = d + "/err.txt";
  std::ofstream(script) << script_text;
  std::ofstream(in) << input.dump();
  const std::string cmd = shell_quote(python) + " " + shell_quote(script) + " <" + shell_quote(in) + " >" +
                          shell_quote(out) + " 2>" + shell_quote(err);
  std::fflush(nullptr);
  const int st = std::system(cmd.c_str());
  const int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream fo(out);
  std::string text((std::istreambuf_iterator<char>(fo)), std::istreambuf_iterator<char>());
  if (code != 0) {
    std::ifstream fe(err);
    std::string line, last;
    while (std::getline(fe, line))
      if (!line.empty()) last = line;
    r.why = python + " exited with " + std::to_string(code) + (last.empty() ? "" : ": " + last);
  } else {
    try {
      r.doc = nlohmann::json::parse(text);
      r.ok = true;
    } catch (const std::exception& e) {
      r.why = "bad JSON from the " + who + ": " + e.what();
    }
  }
  for (const std::string& f : {script, in, out, err}) std::remove(f.c_str());
  rmdir(dir);
  return r;
}

PythonRun run_python_module(const std::string& python, const std::string& module, const std::string& args) {
  PythonRun r;
  // stderr goes to a temp file so a traceback can be summarized in one line.
  char err_path[] = "/tmp/kiln-bench-py-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd < 0) {
    r.why = "cannot create a temporary file";
    return r;
  }
  close(fd);
  const std::string cmd =
      shell_quote(python) + " -m " + module + " " + args + " --json 2>" + shell_quote(err_path);
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    const int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code != 0) {
      std::string last;  // the last non-empty line of stderr names the error
      if (FILE* e = std::fopen(err_path, "r")) {
        char line[1024];
        while (std::fgets(line, sizeof line, e)) {
          std::string s(line);
          while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
          if (!s.empty()) last = s;
        }
        std::fclose(e);
      }
      r.why =
          python + " -m " + module + " exited with " + std::to_string(code) + (last.empty() ? "" : ": " + last);
    }
  } else {
    r.why = "cannot run " + python;
  }
  std::remove(err_path);
  if (!r.why.empty()) return r;
  try {
    r.doc = nlohmann::json::parse(out);
    r.ok = r.doc.is_object() && r.doc.contains("results");
    if (!r.ok) r.why = module + " printed JSON without a results list";
  } catch (const std::exception& e) {
    r.why = module + " printed no valid JSON: " + e.what();
  }
  return r;
}

std::string plot_with_python(const std::string& python, const nlohmann::json& doc,
                             const std::string& out_png) {
  if (python.empty()) return "no python next to the kiln binary to draw with";
  char json_path[] = "/tmp/kiln-bench-plot-XXXXXX";
  const int fd = mkstemp(json_path);
  if (fd < 0) return "cannot create a temporary file";
  close(fd);
  std::ofstream(json_path) << doc.dump() << "\n";
  const std::string cmd = shell_quote(python) + " -m kiln.bench_plot " + shell_quote(json_path) + " " +
                          shell_quote(out_png) + " 2>&1";
  std::string out;
  int code = -1;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[1024];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::remove(json_path);
  if (code == 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const size_t nl = out.find_last_of('\n');
  return "plotting failed: " + (nl == std::string::npos ? out : out.substr(nl + 1));
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace kiln::cli::bench
