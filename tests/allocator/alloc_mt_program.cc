// A multithreaded C++ program for the preload tests: worker threads build
// containers, hand objects to each other through a queue (so frees cross
// threads), and the main thread forks while they run. Its output is a
// checksum that does not depend on the allocator or on scheduling.
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<std::vector<std::string>>> items;
  int producers_left = 0;
};

uint64_t Hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

int main() {
  constexpr int kProducers = 4, kConsumers = 4, kItems = 20000;
  Queue q;
  q.producers_left = kProducers;
  std::vector<uint64_t> sums(kConsumers);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&q, p] {
      std::map<int, std::string> scratch;
      for (int i = 0; i < kItems; ++i) {
        auto v = std::make_unique<std::vector<std::string>>();
        for (int k = 0; k < 1 + i % 7; ++k) v->push_back(std::string(8 + (i * 31 + k) % 200, char('a' + (p + k) % 26)));
        scratch[i % 500] = v->front();
        std::lock_guard<std::mutex> g(q.mu);
        q.items.push_back(std::move(v));
        q.cv.notify_one();
      }
      std::lock_guard<std::mutex> g(q.mu);
      --q.producers_left;
      q.cv.notify_all();
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&q, &sums, c] {
      std::unordered_map<uint64_t, int> seen;
      for (;;) {
        std::unique_ptr<std::vector<std::string>> v;
        {
          std::unique_lock<std::mutex> l(q.mu);
          q.cv.wait(l, [&] { return !q.items.empty() || q.producers_left == 0; });
          if (q.items.empty()) break;
          v = std::move(q.items.front());
          q.items.pop_front();
        }
        for (const auto& s : *v) {
          sums[c] += Hash(s);
          ++seen[Hash(s) % 1024];
        }
      }  // v freed here, by a thread that did not allocate it
    });
  }
  // Fork while the workers allocate: the child must find the allocator usable.
  const pid_t child = fork();
  if (child == 0) {
    std::vector<std::unique_ptr<std::string>> v;
    for (int i = 0; i < 10000; ++i) v.push_back(std::make_unique<std::string>(i % 300, 'x'));
    _exit(v.size() == 10000 ? 7 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  std::printf("child=%d checksum=%llu\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
              static_cast<unsigned long long>(total));
  return 0;
}
