#include "threads.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace libdump::heapgraph {
namespace {

std::atomic<unsigned> forced{0};

unsigned FromEnvironment() {
  if (const char* s = std::getenv("LIBDUMP_INDEX_THREADS"); s && *s) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(s, &end, 10);
    if (*end == '\0' && v > 0) return static_cast<unsigned>(std::min<unsigned long>(v, kMaxThreads));
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
}

}  // namespace

unsigned Threads() {
  if (const unsigned n = forced.load(std::memory_order_relaxed)) return n;
  static const unsigned n = FromEnvironment();
  return n;
}

void SetThreads(unsigned n) { forced.store(std::min(n, kMaxThreads), std::memory_order_relaxed); }

void RunParallel(unsigned parts, const std::function<void(unsigned)>& part) {
  std::exception_ptr error;
  std::mutex mu;
  auto run = [&](unsigned k) {
    try {
      part(k);
    } catch (...) {
      std::lock_guard<std::mutex> l(mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(parts > 1 ? parts - 1 : 0);
  for (unsigned k = 1; k < parts; ++k) {
    try {
      threads.emplace_back(run, k);
    } catch (const std::system_error&) {
      run(k);  // no thread to be had: this part here, after the others start
    }
  }
  run(0);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace libdump::heapgraph
