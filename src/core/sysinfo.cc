#include "core/sysinfo.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace kiln::sys {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// x86 says "model name"; arm64 kernels often say nothing useful, so fall back
// to the implementer/part pair before giving up.
std::string read_cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, implementer, part;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if ((key == "model name" || key == "Model" || key == "cpu model") && !value.empty()) return value;
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (!implementer.empty()) return "implementer " + implementer + " part " + part;
  return "unknown";
}

int64_t read_meminfo(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream in(line.substr(prefix.size()));
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

SystemInfo probe() {
  SystemInfo s;
  s.cpu_model = read_cpu_model();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  s.logical_cores = online > 0 ? int(online) : std::max(1u, std::thread::hardware_concurrency());
  // cpu0's cache/indexN directories: level + type + size each.
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = trim(read_line(dir + "level"));
    if (level.empty()) continue;  // indices are dense on Linux, but be lenient
    const std::string type = trim(read_line(dir + "type"));
    const int64_t size = parse_cache_size(trim(read_line(dir + "size")));
    if (type == "Instruction") continue;
    if (level == "1" && type == "Data") s.l1d_bytes = size;
    if (level == "2") s.l2_bytes = size;
    if (level == "3") s.l3_bytes = size;
  }
  s.mem_total_bytes = read_meminfo("MemTotal");
  s.mem_available_bytes = read_meminfo("MemAvailable");
  return s;
}

}  // namespace

int64_t SystemInfo::llc_bytes() const {
  if (l3_bytes > 0) return l3_bytes;
  if (l2_bytes > 0) return l2_bytes;
  return l1d_bytes;
}

int64_t available_memory_bytes() {
  int64_t avail = read_meminfo("MemAvailable");
  // A container's limit is lower than the host's free memory: memory.max
  // ("max" when unlimited) less memory.current, of this process's cgroup.
  std::string cg = read_line("/proc/self/cgroup");  // v2: "0::/path"
  if (cg.rfind("0::", 0) == 0) {
    const std::string dir = "/sys/fs/cgroup" + trim(cg.substr(3));
    const std::string max = trim(read_line(dir + "/memory.max"));
    const std::string cur = trim(read_line(dir + "/memory.current"));
    auto digits = [](const std::string& t) {
      return !t.empty() && t.size() < 19 && std::all_of(t.begin(), t.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch)) != 0;
      });
    };
    if (digits(max) && digits(cur)) {
      const int64_t room = std::max<int64_t>(0, std::stoll(max) - std::stoll(cur));
      avail = avail > 0 ? std::min(avail, room) : room;
    }
  }
  return avail;
}

const SystemInfo& system_info() {
  static const SystemInfo info = probe();
  return info;
}

int64_t parse_cache_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  size_t pos = 0;
  int64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (value > (int64_t(1) << 40)) return 0;  // nonsense; don't overflow
    value = value * 10 + (text[pos++] - '0');
  }
  const std::string unit = text.substr(pos);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return 0;
}

std::string format_bytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == double(int64_t(v)))
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(v), kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

}  // namespace kiln::sys
