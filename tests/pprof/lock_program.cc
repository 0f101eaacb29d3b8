// A program of known lock contention for the preload's block and mutex
// profiles: four threads take turns holding one mutex for 2 ms, 20 times
// each (LockWorker waits and releases). Then, by its argument:
//   none          exits normally
//   TERM          sends itself SIGTERM (and waits for it)
//   USR1 FILE     sends itself SIGUSR1, waits up to 20 s for FILE, exits
//   loop SECONDS  keeps the threads contending that long, then exits
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

std::mutex g_mu;

__attribute__((noipa)) void LockWorker() {
  for (int i = 0; i < 20; ++i) {
    std::lock_guard<std::mutex> l(g_mu);
    const timespec ts{0, 2000000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const time_t end = argc > 2 && std::strcmp(argv[1], "loop") == 0 ? time(nullptr) + std::atoi(argv[2]) : 0;
  do {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back(LockWorker);
    for (std::thread& t : threads) t.join();
  } while (time(nullptr) < end);
  if (argc > 1 && std::strcmp(argv[1], "TERM") == 0) {
    kill(getpid(), SIGTERM);
    for (;;) pause();
  }
  if (argc > 2 && std::strcmp(argv[1], "USR1") == 0) {
    kill(getpid(), SIGUSR1);
    for (int i = 0; i < 200 && access(argv[2], F_OK) != 0; ++i) {
      const timespec ts{0, 100000000};
      nanosleep(&ts, nullptr);
    }
  }
  return 0;
}
