#include "kiln/thread_pool.h"

#include "kiln/error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
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

int default_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// Workers wait on a generation counter: spin for a short while (a following op
// usually arrives within microseconds), then sleep on the condition variable.
class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }

  int size() const { return int(workers_.size()) + 1; }

  // Waits for any running region (run_mu_) so workers never vanish mid-region.
  void resize_if_needed(int n) {
    std::lock_guard<std::mutex> run_lock(run_mu_);
    if (n != size()) resize(n);
  }

  void resize(int n) {
    stop();
    quit_ = false;
    // A worker must know the generation current at its creation: reading it
    // when the thread first runs could miss a region started in between.
    const uint64_t gen = generation_.load();
    for (int i = 0; i + 1 < n; ++i) workers_.emplace_back([this, gen] { loop(gen); });
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
    // Every worker checks in for every region (active_), so no worker can still
    // be reading task_ when the next region overwrites it.
    task_ = Task{begin, end, chunks, ctx, fn};
    next_chunk_.store(0, std::memory_order_relaxed);
    active_.store(int(workers_.size()), std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    work();
    while (active_.load(std::memory_order_acquire) != 0) KILN_PAUSE();
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

  void work() {
    t_in_parallel = true;
    for (;;) {
      const int c = next_chunk_.fetch_add(1, std::memory_order_acq_rel);
      if (c >= task_.chunks) break;
      const int64_t n = task_.end - task_.begin;
      const int64_t b = task_.begin + n * c / task_.chunks;
      const int64_t e = task_.begin + n * (c + 1) / task_.chunks;
      try {
        task_.fn(task_.ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
    t_in_parallel = false;
  }

  void loop(uint64_t seen) {
    for (;;) {
      int spins = 0;
      while (generation_.load(std::memory_order_acquire) == seen && !quit_.load()) {
        if (++spins < 20000) {
          KILN_PAUSE();
        } else {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return generation_.load() != seen || quit_.load(); });
        }
      }
      if (quit_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      work();
      active_.fetch_sub(1, std::memory_order_acq_rel);
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
  std::mutex run_mu_, mu_, err_mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> quit_{false};
  std::atomic<int> next_chunk_{0};
  std::atomic<int> active_{0};
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
  pool().resize_if_needed(n);
}

bool in_parallel_region() { return t_in_parallel; }

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, void* ctx, RangeFn fn) {
  pool().run(begin, end, grain, ctx, fn);
}
}  // namespace detail

}  // namespace kiln
