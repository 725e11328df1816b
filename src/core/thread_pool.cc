#include "kiln/thread_pool.h"

#include "kiln/error.h"

#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_PAUSE() _mm_pause()
#else
#define KILN_PAUSE() std::this_thread::yield()
#endif

namespace kiln {
namespace {

thread_local bool t_in_parallel = false;

// The CPUs this process may run on (its affinity mask: taskset, cgroups),
// else every CPU of the machine.
int usable_cpus() {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

int default_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return std::min(n, kMaxThreads);
  }
  return std::min(usable_cpus(), kMaxThreads);
}

// A region is published as one 64-bit word: its generation (32 bits), its
// chunk count and the next unclaimed chunk (16 bits each). Every thread
// claims chunks with a compare-exchange on that word, so a claim can only
// succeed while its region is current, and the caller waits for the claimed
// chunks to finish, not for every worker to check in: a worker the OS has
// descheduled (more threads than free cores, a busy machine) delays no region
// it has not joined, and the caller runs the chunks nobody took.
//
// Waiting threads spin briefly, then yield the core (a thread that holds a
// chunk may need it), then sleep on the condition variable.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }

  // Read by num_threads() from any thread, also while another one resizes.
  int size() const { return size_.load(std::memory_order_relaxed); }

  // Waits for any running region (run_mu_) so workers never vanish mid-region.
  void resize_if_needed(int n) {
    std::lock_guard<std::mutex> run_lock(run_mu_);
    if (n != size()) resize(n);
  }

  void resize(int n) {
    stop();
    quit_ = false;
    const uint32_t gen = generation_;
    for (int i = 0; i + 1 < n; ++i) workers_.emplace_back([this, gen] { loop(gen); });
    size_.store(n, std::memory_order_relaxed);
  }

  void run(int64_t begin, int64_t end, int64_t grain, void* ctx, detail::RangeFn fn) {
    std::lock_guard<std::mutex> run_lock(run_mu_);  // one parallel region at a time
    const int64_t n = end - begin;
    const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
    const int chunks = int(std::min<int64_t>(size(), max_chunks));
    if (chunks <= 1) {
      struct Region {  // restores the flag even when fn throws
        Region() { t_in_parallel = true; }
        ~Region() { t_in_parallel = false; }
      } region;
      fn(ctx, begin, end);
      return;
    }
    // No thread reads task_ now: every chunk of the last region has finished,
    // and a claim on it can no longer succeed.
    task_ = Task{begin, end, chunks, ctx, fn};
    done_.store(0, std::memory_order_relaxed);
    const uint32_t gen = ++generation_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_.store(pack(gen, chunks, 0), std::memory_order_release);
    }
    cv_.notify_all();
    work(gen);
    for (int spins = 0; done_.load(std::memory_order_acquire) != chunks; ++spins) pause_or_yield(spins);
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  struct Task {
    int64_t begin = 0, end = 0;
    int chunks = 0;
    void* ctx = nullptr;
    detail::RangeFn fn = nullptr;
  };

  // A pause is 40-140 cycles: 20000 are about a millisecond, enough for the
  // small ops between two regions and for the other thread's chunk of one.
  // Yields come only after that: a thread in sched_yield runs kernel code,
  // which disturbs a sibling hardware thread doing the work more than pausing.
  static constexpr int kSpins = 20000;
  static constexpr int kYields = 5000;

  static uint64_t pack(uint32_t gen, int chunks, int next) {
    return uint64_t(gen) << 32 | uint64_t(uint16_t(chunks)) << 16 | uint16_t(next);
  }
  static uint32_t gen_of(uint64_t s) { return uint32_t(s >> 32); }
  static int chunks_of(uint64_t s) { return int(uint16_t(s >> 16)); }
  static int next_of(uint64_t s) { return int(uint16_t(s)); }

  static void pause_or_yield(int spins) {
    if (spins < kSpins)
      KILN_PAUSE();
    else
      std::this_thread::yield();
  }

  // Claims and runs chunks of region `gen` until none is left.
  void work(uint32_t gen) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (;;) {
      if (gen_of(s) != gen || next_of(s) >= chunks_of(s)) return;
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      // The region cannot end (nor task_ change) before this chunk is done.
      const int c = next_of(s);
      const int64_t len = task_.end - task_.begin;
      const int64_t b = task_.begin + len * c / task_.chunks;
      const int64_t e = task_.begin + len * (c + 1) / task_.chunks;
      t_in_parallel = true;
      try {
        task_.fn(task_.ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu_);
        if (!error_) error_ = std::current_exception();
      }
      t_in_parallel = false;
      done_.fetch_add(1, std::memory_order_acq_rel);
      s = state_.load(std::memory_order_acquire);
    }
  }

  void loop(uint32_t seen) {
    for (;;) {
      for (int spins = 0;; ++spins) {
        if (quit_.load()) return;
        const uint32_t g = gen_of(state_.load(std::memory_order_acquire));
        if (g != seen) {
          seen = g;
          break;
        }
        if (spins < kSpins + kYields) {
          pause_or_yield(spins);
        } else {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return gen_of(state_.load()) != seen || quit_.load(); });
        }
      }
      work(seen);
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::atomic<int> size_{1};  // workers_.size() + 1, the caller
  std::mutex run_mu_, mu_, err_mu_;
  std::condition_variable cv_;
  uint32_t generation_ = 0;            // the last region's, written by the caller only
  std::atomic<uint64_t> state_{0};     // pack(generation, chunks, next chunk)
  std::atomic<bool> quit_{false};
  std::atomic<int> done_{0};           // chunks of the current region finished
  Task task_;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool* p = new Pool(default_threads());  // never destroyed: avoids exit-order races
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  if (in_parallel_region())
    throw ValueError("[set_num_threads] cannot resize the thread pool from inside a parallel region");
  if (n < 1) n = 1;
  if (n > kMaxThreads)
    throw ValueError("[set_num_threads] at most " + std::to_string(kMaxThreads) + " threads, got " + std::to_string(n));
  pool().resize_if_needed(n);
}

bool in_parallel_region() { return t_in_parallel; }

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, void* ctx, RangeFn fn) {
  pool().run(begin, end, grain, ctx, fn);
}
}  // namespace detail

}  // namespace kiln
