#include "output_file.h"

#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/output/exclusive_file.h"

namespace libdump::tools {
namespace {

// Temporaries to remove when SIGINT, SIGTERM or SIGHUP ends the process. A
// signal handler may only call async-signal-safe functions, so the table is
// fixed-size static storage and the handler is hand-written: unlink() each
// registered path, then die of the same signal with its default action.
constexpr int kSlots = 4;
struct Slot {
  std::atomic<bool> claimed{false};  // owned by an OutputFile
  std::atomic<bool> used{false};     // path names a temporary that exists
  char path[PATH_MAX];
};
Slot g_slots[kSlots];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void RemoveTemporaries(int sig) {
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void InstallHandlerOnce() {
  static const bool installed = [] {
    for (int sig : kSignals) {
      struct sigaction old {};
      // A signal the caller ignores (nohup) stays ignored.
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = RemoveTemporaries;
      sigemptyset(&sa.sa_mask);
      for (int s : kSignals) sigaddset(&sa.sa_mask, s);
      ::sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)installed;
}

// Blocks the cleanup signals while a temporary is created or moved, so the
// table and the file system never disagree when the handler runs.
class BlockSignals {
 public:
  BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals) sigaddset(&set, s);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

[[noreturn]] void Fail(const std::string& path, const std::string& what) { throw OutputError(path + ": " + what); }
[[noreturn]] void FailErrno(const std::string& path, const std::string& what) {
  Fail(path, what + ": " + std::strerror(errno));
}

bool SameFile(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Refuses a target that exists and may not be replaced. `st` is its lstat.
void CheckExisting(const OutputSpec& spec, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) Fail(spec.path, "is a symbolic link; not replaced (name its target instead)");
  if (!S_ISREG(st.st_mode)) Fail(spec.path, "is not a regular file; not replaced (write to '-' and redirect)");
  if (spec.input != nullptr && SameFile(st, *spec.input)) Fail(spec.path, "is the input file");
  if (!spec.force) Fail(spec.path, "already exists; --force replaces it");
}

}  // namespace

mode_t OutputModeFor(const struct stat& input) { return input.st_mode & 0666; }

OutputFile::OutputFile(const OutputSpec& spec) : spec_(spec) {
  if (spec_.path == "-") {
    struct stat st;
    if (spec_.input != nullptr && ::fstat(STDOUT_FILENO, &st) == 0 && SameFile(st, *spec_.input)) {
      Fail("standard output", "is the input file");
    }
    fd_ = STDOUT_FILENO;
    stdout_ = true;
    return;
  }
  if (spec_.path.empty()) Fail("''", "no output file named");
  struct stat st;
  if (::lstat(spec_.path.c_str(), &st) == 0) {
    CheckExisting(spec_, st);
  } else if (errno != ENOENT) {
    FailErrno(spec_.path, "cannot check");
  }
  InstallHandlerOnce();
  BlockSignals block;
  for (int i = 0; i < kSlots && slot_ < 0; ++i) {
    bool expected = false;
    if (g_slots[i].claimed.compare_exchange_strong(expected, true)) slot_ = i;
  }
  if (slot_ < 0) Fail(spec_.path, "too many outputs open at once");
  try {
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      unsigned char rnd[6];
      if (::getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) FailErrno(spec_.path, "getrandom");
      static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
      temp_ = spec_.path + ".tmp";
      for (unsigned char c : rnd) temp_ += kChars[c % (sizeof kChars - 1)];
      if (temp_.size() >= PATH_MAX) Fail(spec_.path, "path too long");
      std::memcpy(g_slots[slot_].path, temp_.c_str(), temp_.size() + 1);
      fd_ = output::CreateExclusive(temp_.c_str(), 0600);
      if (fd_ < 0 && errno != EEXIST) FailErrno(spec_.path, "cannot create a temporary file beside it");
    }
    if (fd_ < 0) Fail(spec_.path, "cannot create a temporary file beside it");
  } catch (...) {
    g_slots[slot_].claimed.store(false, std::memory_order_release);
    throw;
  }
  g_slots[slot_].used.store(true, std::memory_order_release);
}

OutputFile::~OutputFile() {
  Discard();
  if (slot_ >= 0) g_slots[slot_].claimed.store(false, std::memory_order_release);
}

void OutputFile::Discard() {
  if (stdout_ || fd_ < 0) return;
  BlockSignals block;
  output::CloseAndRemove(fd_, temp_.c_str());
  fd_ = -1;
  g_slots[slot_].used.store(false, std::memory_order_release);
}

void OutputFile::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) FailErrno(spec_.path, "cannot write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputFile::Commit() {
  if (stdout_) return;
  if (fd_ < 0) Fail(spec_.path, "already closed");
  if (::fchmod(fd_, spec_.mode) != 0 || ::fsync(fd_) != 0) FailErrno(spec_.path, "cannot write");
  BlockSignals block;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(temp_.c_str());
    g_slots[slot_].used.store(false, std::memory_order_release);
    errno = e;
    FailErrno(spec_.path, "cannot write");
  }
  // The target may have appeared or changed since the constructor looked.
  struct stat st;
  int err;
  if (::lstat(spec_.path.c_str(), &st) == 0) {
    try {
      CheckExisting(spec_, st);
    } catch (...) {
      ::unlink(temp_.c_str());
      g_slots[slot_].used.store(false, std::memory_order_release);
      throw;
    }
    err = ::rename(temp_.c_str(), spec_.path.c_str()) == 0 ? 0 : errno;
  } else if (spec_.force) {
    err = ::rename(temp_.c_str(), spec_.path.c_str()) == 0 ? 0 : errno;
  } else {
    // Without --force nothing may be replaced, even a file created a moment ago.
    err = output::RenameNoReplace(temp_.c_str(), spec_.path.c_str());
  }
  if (err != 0) ::unlink(temp_.c_str());
  g_slots[slot_].used.store(false, std::memory_order_release);
  if (err != 0) {
    errno = err;
    if (err == EEXIST) Fail(spec_.path, "appeared while writing; not replaced");
    FailErrno(spec_.path, "cannot rename the temporary file to it");
  }
}

}  // namespace libdump::tools
