// `kiln bench linalg`: the linear-algebra cases of issue 7 side by side with
// raw LAPACK (OpenBLAS, called here on the same data), NumPy/SciPy (always,
// through the python next to kiln) and torch (when that python has it, or
// through --peer-python PATH). Compute-bound cases: times, not GB/s.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/python_side.h"
#include "cli_io.h"
#include "commands.h"
#include "internal/bench_hooks.h"
#include "kiln/allocator.h"
#include "bench/options.h"
#include "kiln/binary.h"
#include "kiln/blas_env.h"
#include "kiln/linalg.h"
#include "kiln/random.h"
#include "kiln/sysinfo.h"
#include "kiln/tensor.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct LinalgOptions : bench::CommonOptions {
  int threads = 0;
  std::string python;       // numpy side (default: the python next to kiln)
  std::string peer_python;  // an extra interpreter for torch
  bool no_python = false;
  std::string filter;
};

// One case: what kiln runs, and the same problem for the Python peers.
struct Case {
  std::string name;
  std::string op;     // peer script key: inv, trsm, lu, qr, svd
  std::string dtype;  // numpy dtype name
  std::vector<int64_t> shape;
  int64_t nrhs = 0;
  std::function<std::function<void()>()> kiln_fn;    // builds inputs, returns the timed call
  std::function<std::function<void()>()> lapack_fn;  // raw LAPACK on the same problem (may be empty)
};

// The OpenBLAS thread count kiln's own calls use for an n x n problem.
int blas_threads_for(int64_t n) { return n >= linalg::detail::kBlasThreadMinN ? kiln::num_threads() : 1; }

// The peer script: prints {case: {peer: [seconds...]}} for numpy/scipy and torch.
const char* kPeerScript = R"PY(
import json, sys, time
cases = json.loads(sys.argv[1]); repeat = int(sys.argv[2]); warmup = int(sys.argv[3]); threads = int(sys.argv[4])
import numpy as np
peers = {"numpy": np}
try:
    import torch
    torch.set_num_threads(threads)  # kiln's thread count: side by side on equal terms
    peers["torch"] = torch
except Exception:
    pass
if len(sys.argv) > 5 and sys.argv[5] == "torch-only":
    peers.pop("numpy", None)
rng = np.random.default_rng(0)
def make(c):
    shape = tuple(c["shape"]); dt = np.dtype(c["dtype"])
    a = rng.standard_normal(shape)
    if dt.kind == "c": a = a + 1j * rng.standard_normal(shape)
    if c["op"] == "inv": a = a + 4 * np.eye(shape[-1])
    if c["op"] == "trsm": a = np.tril(a * 0.1, -1) + np.eye(shape[-1])
    return a.astype(dt)
def fns(c, a):
    out = {}
    b = np.ones(a.shape[:-1] + (c["nrhs"],), a.dtype) if c["nrhs"] else None
    if "numpy" in peers:
        import scipy.linalg as sla
        if c["op"] == "inv": out["numpy"] = lambda: np.linalg.inv(a)
        if c["op"] == "trsm": out["numpy"] = lambda: [sla.solve_triangular(a[i], b[i], lower=True, unit_diagonal=True) for i in range(a.shape[0])]
        if c["op"] == "lu": out["numpy"] = lambda: sla.lu_factor(a)
        if c["op"] == "qr": out["numpy"] = lambda: np.linalg.qr(a)
        if c["op"] == "svd": out["numpy"] = lambda: np.linalg.svd(a)
    if "torch" in peers:
        t = torch.from_numpy(a); tb = torch.from_numpy(b) if b is not None else None
        if c["op"] == "inv": out["torch"] = lambda: torch.linalg.inv(t)
        if c["op"] == "trsm": out["torch"] = lambda: torch.linalg.solve_triangular(t, tb, upper=False, unitriangular=True)
        if c["op"] == "lu": out["torch"] = lambda: torch.linalg.lu_factor(t)
        if c["op"] == "qr": out["torch"] = lambda: torch.linalg.qr(t)
        if c["op"] == "svd": out["torch"] = lambda: torch.linalg.svd(t)
    return out
res = {"peers": {k: getattr(v, "__version__", "?") for k, v in peers.items()}, "cases": {}}
for c in cases:
    a = make(c); r = {}
    for peer, f in fns(c, a).items():
        for _ in range(warmup): f()
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        r[peer] = ts
    res["cases"][c["name"]] = r
print(json.dumps(res))
)PY";

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the peer script with `python`; {} on failure (why in `why`).
json run_peers(const std::string& python, const json& cases, int repeat, int warmup, bool torch_only,
               std::string& why) {
  char path[] = "/tmp/kiln-bench-linalg-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    why = "cannot create a temporary file";
    return {};
  }
  if (write(fd, kPeerScript, std::strlen(kPeerScript)) < 0) why = "cannot write the peer script";
  close(fd);
  const std::string cmd = shell_quote(python) + " " + path + " " + shell_quote(cases.dump()) + " " +
                          std::to_string(repeat) + " " + std::to_string(warmup) + " " +
                          std::to_string(kiln::num_threads()) + (torch_only ? " torch-only" : "") +
                          " 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) why = python + " failed running the peer script (needs numpy and scipy)";
  } else {
    why = "cannot run " + python;
  }
  std::remove(path);
  if (!why.empty()) return {};
  try {
    return json::parse(out);
  } catch (const std::exception& e) {
    why = std::string("peer script printed no valid JSON: ") + e.what();
    return {};
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Tensor randn_t(const Shape& s, DType dt) {
  if (is_complex(dt)) {
    // real and imaginary parts from one real randn of twice the size
    Tensor r = kiln::randn(Shape{shape_numel(s, "bench") * 2}, to_real(dt));
    Tensor c = empty(s, dt);
    std::memcpy(c.data_ptr(), r.data_ptr(), c.nbytes());
    return c;
  }
  return kiln::randn(s, dt);
}

template <typename T>
std::function<void()> lapack_lu(const Tensor& A) {
  const int64_t n = A.size(-1);
  auto src = std::make_shared<Tensor>(A.transpose(0, 1).contiguous());
  auto work = std::make_shared<std::vector<T>>(size_t(n * n));
  auto piv = std::make_shared<std::vector<cpu::lapack::lint>>(size_t(n));
  return [=] {
    linalg::detail::BlasThreads bt(blas_threads_for(n));
    std::memcpy(work->data(), src->data_ptr(), sizeof(T) * n * n);
    cpu::lapack::getrf<T>(n, n, work->data(), n, piv->data());
  };
}

template <typename T>
std::function<void()> lapack_qr(const Tensor& A) {
  const int64_t m = A.size(0), n = A.size(1), k = std::min(m, n);
  auto src = std::make_shared<Tensor>(A.transpose(0, 1).contiguous());
  auto work = std::make_shared<std::vector<T>>(size_t(m * n));
  auto tau = std::make_shared<std::vector<T>>(size_t(k));
  return [=] {
    linalg::detail::BlasThreads bt(blas_threads_for(std::max(m, n)));
    std::memcpy(work->data(), src->data_ptr(), sizeof(T) * m * n);
    cpu::lapack::geqrf<T>(m, n, work->data(), m, tau->data());
    cpu::lapack::orgqr<T>(m, k, k, work->data(), m, tau->data());
  };
}

template <typename T>
std::function<void()> lapack_svd(const Tensor& A) {
  const int64_t m = A.size(0), n = A.size(1);
  auto src = std::make_shared<Tensor>(A.transpose(0, 1).contiguous());
  auto work = std::make_shared<std::vector<T>>(size_t(m * n));
  auto u = std::make_shared<std::vector<T>>(size_t(m * m));
  auto vt = std::make_shared<std::vector<T>>(size_t(n * n));
  auto s = std::make_shared<std::vector<cpu::lapack::real_t<T>>>(size_t(std::min(m, n)));
  return [=] {
    linalg::detail::BlasThreads bt(blas_threads_for(std::max(m, n)));
    std::memcpy(work->data(), src->data_ptr(), sizeof(T) * m * n);
    cpu::lapack::gesdd<T>('A', m, n, work->data(), m, s->data(), u->data(), m, vt->data(), n);
  };
}

std::vector<Case> make_cases(bool quick) {
  const int64_t inv_batch = quick ? 1000 : 100000, tri_batch = quick ? 4 : 32;
  const int64_t lu1 = quick ? 64 : 1024, lu2 = quick ? 128 : 2048;
  const int64_t qm = quick ? 256 : 4096, qn = quick ? 32 : 256, qs = quick ? 128 : 2048,
                sv = quick ? 64 : 1024;
  std::vector<Case> cs;
  auto nm = [](const std::string& s) { return s; };
  cs.push_back({nm("inv f32 " + std::to_string(inv_batch) + "x4x4"),
                "inv",
                "float32",
                {inv_batch, 4, 4},
                0,
                [=] {
                  auto A = std::make_shared<Tensor>(
                      kiln::add(randn_t({inv_batch, 4, 4}, DType::Float32),
                                kiln::mul(eye(4), scalar_tensor(Scalar(4.0), DType::Float32))));
                  return std::function<void()>([A] { Tensor x = linalg::inv(*A); });
                },
                {}});
  cs.push_back({nm("solve_triangular f32 " + std::to_string(tri_batch) + "x64x64 unit-lower, 64 rhs"),
                "trsm",
                "float32",
                {tri_batch, 64, 64},
                64,
                [=] {
                  // Scaled like the peers' input so the substitution stays finite.
                  Tensor a = kiln::mul(randn_t({tri_batch, 64, 64}, DType::Float32),
                                       scalar_tensor(Scalar(0.1), DType::Float32));
                  auto A = std::make_shared<Tensor>(a);
                  auto B = std::make_shared<Tensor>(kiln::ones({tri_batch, 64, 64}));
                  return std::function<void()>(
                      [A, B] { Tensor x = linalg::solve_triangular(*A, *B, false, true, true); });
                },
                {}});
  for (int64_t n : {lu1, lu2}) {
    cs.push_back({nm("lu_factor c64 " + std::to_string(n) + "x" + std::to_string(n)),
                  "lu",
                  "complex64",
                  {n, n},
                  0,
                  [=] {
                    auto A = std::make_shared<Tensor>(randn_t({n, n}, DType::Complex64));
                    return std::function<void()>([A] { auto r = linalg::lu_factor(*A); });
                  },
                  [=] {
                    return lapack_lu<std::complex<float>>(randn_t({n, n}, DType::Complex64));
                  }});
  }
  for (auto [m, n] : {std::pair{qm, qn}, std::pair{qs, qs}}) {
    cs.push_back({nm("qr f32 " + std::to_string(m) + "x" + std::to_string(n)),
                  "qr",
                  "float32",
                  {m, n},
                  0,
                  [=] {
                    auto A = std::make_shared<Tensor>(randn_t({m, n}, DType::Float32));
                    return std::function<void()>([A] { auto r = linalg::qr(*A); });
                  },
                  [=] {
                    return lapack_qr<float>(randn_t({m, n}, DType::Float32));
                  }});
  }
  cs.push_back({nm("svd f32 " + std::to_string(sv) + "x" + std::to_string(sv)),
                "svd",
                "float32",
                {sv, sv},
                0,
                [=] {
                  auto A = std::make_shared<Tensor>(randn_t({sv, sv}, DType::Float32));
                  return std::function<void()>([A] { auto r = linalg::svd(*A); });
                },
                [=] {
                  return lapack_svd<float>(randn_t({sv, sv}, DType::Float32));
                }});
  return cs;
}

void add_peer(json& r, const std::string& peer, double t) {
  r["peer_median_s"][peer] = t;
  r["speedup_vs_" + peer] = t / r["median_s"].get<double>();
}

int run_linalg(LinalgOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  sys::ReadRoof roof(size_t(8) << 20);  // not used for timing: these cases are compute-bound
  bench::Runner runner(roof, opt.runner_options());
  std::vector<Case> cases;
  for (Case& c : make_cases(opt.quick))
    if (opt.filter.empty() || c.name.find(opt.filter) != std::string::npos) cases.push_back(std::move(c));

  json results = json::array(), missing = json::array();
  json peer_cases = json::array();
  for (const Case& c : cases) {
    if (!opt.json) std::fprintf(stderr, "  %s ...\n", c.name.c_str());
    kiln::manual_seed(1);
    const std::function<void()> fn = c.kiln_fn();
    bench::Result r = runner.latency_case(c.name, 1, fn);
    r.unit = "s/call";
    json j = r.to_json();
    if (c.lapack_fn) {
      const std::function<void()> lf = c.lapack_fn();
      const bench::Result lr = runner.latency_case(c.name + " (LAPACK)", 1, lf);
      add_peer(j, "lapack", lr.median_s);
      j["lapack_note"] =
          "OpenBLAS LAPACK called directly on a column-major copy (copy included), with the OpenBLAS thread "
          "count kiln uses for that size";
    }
    results.push_back(j);
    peer_cases.push_back(
        {{"name", c.name}, {"op", c.op}, {"dtype", c.dtype}, {"shape", c.shape}, {"nrhs", c.nrhs}});
    kiln::empty_cache();
  }

  json peers_info = json::object();
  auto merge = [&](const json& doc) {
    for (auto& [k, v] : doc["peers"].items()) peers_info[k] = v;
    for (json& r : results) {
      const std::string n = r["name"];
      if (!doc["cases"].contains(n)) continue;
      for (auto& [peer, ts] : doc["cases"][n].items())
        add_peer(r, peer, median(ts.get<std::vector<double>>()));
    }
  };
  if (!opt.no_python && !cases.empty()) {
    const std::string py = bench::find_python(opt.python);
    if (py.empty()) {
      missing.push_back(
          {{"name", "numpy/torch peers"}, {"why", "no python next to the kiln binary; pass --python PATH"}});
    } else {
      std::string why;
      const json doc = run_peers(py, peer_cases, opt.repeat, opt.warmup, false, why);
      if (why.empty())
        merge(doc);
      else
        missing.push_back({{"name", "numpy peer"}, {"why", why}});
    }
    if (!opt.peer_python.empty()) {
      std::string why;
      const json doc = run_peers(opt.peer_python, peer_cases, opt.repeat, opt.warmup, true, why);
      if (why.empty())
        merge(doc);
      else
        missing.push_back({{"name", "torch peer"}, {"why", why}});
    }
    if (!peers_info.contains("torch"))
      missing.push_back({{"name", "torch peer"}, {"why", "torch not importable; pass --peer-python PATH"}});
  }

  json doc = {{"command", "bench linalg"},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(roof.measure(0.0, 1, 1))},
              {"quick", opt.quick},
              {"repeat", opt.repeat},
              {"warmup", opt.warmup},
              {"threads", kiln::num_threads()},
              {"openblas_core", linalg::openblas_core()},
              {"note",
               "compute-bound cases: median seconds per call; speedup_vs_<peer> = peer time / kiln time. "
               "The numpy peer of solve_triangular is a Python loop of scipy.linalg.solve_triangular "
               "(NumPy has no batched triangular solve); of lu_factor, scipy.linalg.lu_factor."},
              {"peers", peers_info},
              {"results", results}};
  if (!missing.empty()) doc["missing"] = missing;
  if (!opt.out.empty()) write_file(opt.out, doc.dump(2) + "\n");
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  std::printf("kiln %s bench linalg: %s, %d threads%s\n\n", kiln::kVersion,
              sys::system_info().cpu_model.c_str(), kiln::num_threads(),
              opt.quick ? " (--quick: tiny sizes, not a measurement)" : "");
  for (const json& r : results) {
    std::printf("%-52s kiln %10.3f ms", r["name"].get<std::string>().c_str(),
                r["median_s"].get<double>() * 1e3);
    if (r.contains("peer_median_s"))
      for (auto& [peer, t] : r["peer_median_s"].items())
        std::printf("  %s %.3f ms (%.2fx)", peer.c_str(), t.get<double>() * 1e3,
                    r["speedup_vs_" + peer].get<double>());
    std::printf("\n");
  }
  for (const json& mi : missing)
    std::printf("  not measured: %s (%s)\n", mi["name"].get<std::string>().c_str(),
                mi["why"].get<std::string>().c_str());
  return 0;
}

}  // namespace

Command add_bench_linalg(CLI::App& bench) {
  auto opt = std::make_shared<LinalgOptions>();
  CLI::App* app = bench.add_subcommand(
      "linalg", "Batched small inverses and triangular solves, LU, QR and SVD vs LAPACK, NumPy and torch.");
  bench::add_common_options(*app, *opt, {.repeat = 5, .quick_repeat = 2, .warmup = 1, .max_warmup = 1000});
  add_threads_option(*app, opt->threads);
  app->add_option("--python", opt->python,
                  "Python with numpy+scipy for the peers (default: the python next to kiln)");
  app->add_option("--peer-python", opt->peer_python,
                  "Another python (e.g. one with torch) to time torch with");
  app->add_flag("--no-python", opt->no_python, "Skip the NumPy/torch peers");
  app->add_option("--filter", opt->filter, "Run only the cases whose name contains this text");
  return {app, [opt] { return run_linalg(*opt); }};
}

}  // namespace kiln::cli
