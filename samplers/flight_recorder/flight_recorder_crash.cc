// The flight recorder from the environment, its snapshot signal and its
// crash handler.
//
// The crash handler is hand-written rather than a library's because it runs
// on a thread that may hold any lock, inside malloc or inside the recorder
// itself: it opens the file, writes the window with WriteWindowSignalSafe
// (no allocation, no lock, a bounded wait for another snapshot writer;
// frames named from the symbol tables prepared at start) and
// then puts back the handler it replaced and raises the signal again, so the
// process dies as it would have (same signal, same core dump).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>

#include "samplers/symbolize/crash_symbols.h"
#include "platform/env/env_var.h"
#include "platform/output/exclusive_file.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "libdump/flight_recorder.h"
#include "platform/output/output_file.h"

namespace libdump::samplers::flight {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_prev[NSIG];
char g_crash_path[4096];
// The tid of the thread writing the crash snapshot; 0 before any crash. A
// second crash, on that thread (inside the recorder) or another, does not
// write again: that is what keeps a crash in the writer from looping.
std::atomic<int> g_crash_writer{0};
std::atomic<bool> g_crash_done{false};

void Say(const char* a, const char* b) {
  // write(2), not stdio: async-signal-safe.
  if (write(2, a, strlen(a)) < 0 || write(2, b, strlen(b)) < 0 || write(2, "\n", 1) < 0) return;
}

void OnCrash(int sig, siginfo_t*, void*) {
  const int saved_errno = errno;
  const int me = static_cast<int>(syscall(SYS_gettid));
  int expected = 0;
  if (!Recording()) {
    // A forked child: the recorder stayed in the parent; no file.
  } else if (g_crash_writer.compare_exchange_strong(expected, me)) {
    const int fd = output::CreateExclusive(g_crash_path, 0600);
    if (fd < 0) {
      Say("libdump: flight recorder crash snapshot not written: cannot create ", g_crash_path);
    } else {
      // Waits up to 1 s for a WriteTo another thread has in progress.
      if (WriteWindowSignalSafe(fd, sig, 1000) < 0) Say("libdump: flight recorder crash snapshot incomplete: ", g_crash_path);
      close(fd);
    }
    g_crash_done.store(true, std::memory_order_release);
  } else if (expected != me) {
    // Another thread crashed first and is writing: give it up to 2 s
    // before this crash ends the process.
    for (int i = 0; i < 2000 && !g_crash_done.load(std::memory_order_acquire); ++i) {
      const timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
    }
  }
  // The previous disposition, then the same signal again: blocked while this
  // handler runs, it is delivered as the handler returns.
  sigaction(sig, &g_prev[sig], nullptr);
  errno = saved_errno;
  syscall(SYS_tgkill, getpid(), me, sig);
}

void OnSnapshotSignal(int) { RequestSnapshot(); }

// "10s", "500ms", "2m", "1500us", "100ns"; a bare number is seconds.
bool ParseDuration(const char* s, std::chrono::nanoseconds* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  const std::string unit(end);
  double scale;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ns") scale = 1;
  else if (unit == "m") scale = 60e9;
  else return false;
  *out = std::chrono::nanoseconds(static_cast<int64_t>(v * scale));
  return true;
}

}  // namespace

bool StartFromEnvironment() {
  // The environment parser's spellings (on/yes/1, 10M) and one-line refusals.
  const bool on = env::GetBool("LIBDUMP_FLIGHT_RECORDER", false);
  const char* crash = env::Get("LIBDUMP_FLIGHT_RECORDER_ON_CRASH");
  const int sig = env::GetSignal("LIBDUMP_FLIGHT_RECORDER_SIGNAL", 0);
  if (!on && crash == nullptr && sig == 0) return false;
  // Lives as long as the process.
  static auto* recorder = new FlightRecorder;
  if (env::Get("LIBDUMP_FLIGHT_RECORDER_MAX_BYTES") != nullptr) {
    recorder->SetMaxBytes(env::GetSize("LIBDUMP_FLIGHT_RECORDER_MAX_BYTES", 10 << 20, 1, UINT64_MAX));
  }
  if (const char* a = env::Get("LIBDUMP_FLIGHT_RECORDER_MIN_AGE")) {
    std::chrono::nanoseconds d;
    if (ParseDuration(a, &d)) recorder->SetMinAge(d);
    else std::fprintf(stderr, "libdump: LIBDUMP_FLIGHT_RECORDER_MIN_AGE=%s: not a duration (10s, 500ms)\n", a);
  }
  if (const char* a = env::Get("LIBDUMP_FLIGHT_RECORDER_WAIT_THRESHOLD")) {
    std::chrono::nanoseconds d;
    if (ParseDuration(a, &d)) SetWaitThreshold(d.count());
    else std::fprintf(stderr, "libdump: LIBDUMP_FLIGHT_RECORDER_WAIT_THRESHOLD=%s: not a duration (10ms, 500us)\n", a);
  }
  if (!recorder->Start()) {
    std::fprintf(stderr, "libdump: flight recorder not started: %s\n", std::strerror(errno));
    return false;
  }
  if (crash != nullptr) {
    // Expanded now (%p, %t): the handler formats nothing.
    const std::string path = output::ExpandPath(crash);
    if (path.size() >= sizeof g_crash_path) {
      std::fprintf(stderr, "libdump: LIBDUMP_FLIGHT_RECORDER_ON_CRASH: path too long\n");
    } else {
      std::memcpy(g_crash_path, path.c_str(), path.size() + 1);
      // The handler can neither read ELF files nor demangle: names are
      // prepared now (and after each dlopen, by the recorder's thread),
      // unless the program would rather not pay for them at start (then
      // readdump --symbolize names the frames offline).
      if (env::GetBool("LIBDUMP_FLIGHT_RECORDER_CRASH_NAMES", true)) crash_symbols::Prepare();
      for (int s : kCrashSignals) {
        struct sigaction sa {};
        sa.sa_sigaction = OnCrash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(s, &sa, &g_prev[s]);
      }
    }
  }
  if (sig != 0) {
    const int s = sig;
    {
      const char* file = env::Get("LIBDUMP_FLIGHT_RECORDER_FILE");
      SetSnapshotPath(file != nullptr ? file : "flight-%p-%t.json");
      struct sigaction sa {};
      sa.sa_handler = OnSnapshotSignal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(s, &sa, nullptr);
    }
  }
  return true;
}

}  // namespace libdump::samplers::flight
