#include "platform/env/env_var.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <atomic>

namespace libdump::env {
namespace {

// A line built on the stack: no allocation, no stdio lock. Truncated, never
// overrun, when the value is longer than the buffer.
class Line {
 public:
  Line& operator<<(const char* s) {
    while (*s != '\0' && n_ < sizeof buf_ - 1) buf_[n_++] = *s++;
    return *this;
  }
  Line& operator<<(uint64_t v) {
    char digits[24];
    int i = 0;
    do {
      digits[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (i > 0 && n_ < sizeof buf_ - 1) buf_[n_++] = digits[--i];
    return *this;
  }
  // A warning already written is not written again: two readers of one
  // variable (dumps on a signal and on OOM both read LIBDUMP_HEAPDUMP_ZSTD)
  // would otherwise report one mistake twice.
  void Write(int fd) {
    if (!FirstTime()) return;
    buf_[n_++] = '\n';
    for (size_t done = 0; done < n_;) {
      const ssize_t w = ::write(fd, buf_ + done, n_ - done);
      if (w <= 0) return;  // nothing better to do with a failed warning
      done += static_cast<size_t>(w);
    }
  }

 private:
  // The lines written so far, by their FNV-1a hash, in a fixed table that
  // a compare-and-swap fills: no lock or allocation before malloc is ready.
  // Past 64 distinct warnings every line is written.
  bool FirstTime() const {
    static std::atomic<uint64_t> seen[64];
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n_; ++i) h = (h ^ static_cast<uint8_t>(buf_[i])) * 1099511628211ull;
    h |= 1;  // 0 marks a free slot
    for (std::atomic<uint64_t>& slot : seen) {
      uint64_t cur = slot.load(std::memory_order_acquire);
      if (cur == 0 && slot.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) return true;
      if (cur == h) return false;
    }
    return true;
  }

  char buf_[512];
  size_t n_ = 0;
};

// Decimal digits into *out, without overflow. *end: the first other character.
bool Digits(const char* s, uint64_t* out, const char** end) {
  if (*s < '0' || *s > '9') return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    const uint64_t d = static_cast<uint64_t>(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  *end = s;
  return true;
}

struct Named {
  const char* name;
  int sig;
};
// The standard signals by name (sigabbrev_np would do, but is glibc >= 2.32).
constexpr Named kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},     {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"IOT", SIGABRT},    {"BUS", SIGBUS},       {"FPE", SIGFPE},   {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},   {"CONT", SIGCONT}, {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},   {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},     {"SYS", SIGSYS},
};

void AppendSignal(Line& line, int sig) {
  if (sig >= SIGRTMIN) {
    line << "SIGRTMIN+" << static_cast<uint64_t>(sig - SIGRTMIN);
    return;
  }
  for (const Named& k : kSignals) {
    if (k.sig == sig) {
      line << "SIG" << k.name;
      return;
    }
  }
  line << static_cast<uint64_t>(sig);
}

}  // namespace

const char* Get(const char* name) {
  const char* v = ::secure_getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool ParseBool(const char* s, bool* out) {
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue) {
    if (::strcasecmp(s, t) == 0) return *out = true, true;
  }
  for (const char* f : kFalse) {
    if (::strcasecmp(s, f) == 0) return *out = false, true;
  }
  return false;
}

bool ParseUint(const char* s, uint64_t* out) {
  const char* end;
  uint64_t v;
  if (!Digits(s, &v, &end) || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParseSize(const char* s, uint64_t* out) {
  const char* end;
  uint64_t v;
  if (!Digits(s, &v, &end)) return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    case 'b': case 'B': if (end[1] != '\0') return false; break;
    default: return false;
  }
  if (shift != 0) {
    const char* unit = end + 1;
    if (*unit != '\0' && ::strcasecmp(unit, "b") != 0 && ::strcasecmp(unit, "ib") != 0) return false;
    if (v > (UINT64_MAX >> shift)) return false;
    v <<= shift;
  }
  *out = v;
  return true;
}

const char* SignalRefusal(int sig) {
  switch (sig) {
    case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGABRT: case SIGSYS:
      return "is reserved for crashes";
    case SIGKILL: case SIGSTOP:
      return "cannot be caught";
    case SIGINT: case SIGTERM:
      return "asks the process to stop, and must keep doing so";
    case SIGPROF:
      return "is the CPU profiler's timer signal";
    case SIGCHLD:
      return "is sent whenever a child process ends";
    case SIGPIPE:
      return "is raised by writes to closed pipes";
    case SIGCONT: case SIGTSTP: case SIGTTIN: case SIGTTOU:
      return "is used by job control";
    default:
      return nullptr;
  }
}

int ParseSignal(const char* s, const char** why) {
  *why = "is not a signal (a name such as USR2 or SIGUSR2, RTMIN+N, or a number)";
  if (::strncasecmp(s, "SIG", 3) == 0) s += 3;
  int sig = 0;
  uint64_t n;
  const char* end;
  if (ParseUint(s, &n)) {
    if (n == 0 || n > static_cast<uint64_t>(SIGRTMAX)) return 0;
    sig = static_cast<int>(n);
  } else if (::strncasecmp(s, "RTMIN", 5) == 0) {
    n = 0;
    if (s[5] != '\0' && (s[5] != '+' || !Digits(s + 6, &n, &end) || *end != '\0')) return 0;
    if (n > static_cast<uint64_t>(SIGRTMAX - SIGRTMIN)) return 0;
    sig = SIGRTMIN + static_cast<int>(n);
  } else if (::strncasecmp(s, "RTMAX", 5) == 0) {
    n = 0;
    if (s[5] != '\0' && (s[5] != '-' || !Digits(s + 6, &n, &end) || *end != '\0')) return 0;
    if (n > static_cast<uint64_t>(SIGRTMAX - SIGRTMIN)) return 0;
    sig = SIGRTMAX - static_cast<int>(n);
  } else {
    for (const Named& k : kSignals) {
      if (::strcasecmp(s, k.name) == 0) sig = k.sig;
    }
    if (sig == 0) return 0;
  }
  // glibc keeps the first real-time signals for its threads (SIGRTMIN is
  // above them), and 32..SIGRTMIN-1 have no names.
  if (sig > SIGSYS && sig < SIGRTMIN) {
    *why = "is reserved by the C library for its threads";
    return 0;
  }
  if (const char* r = SignalRefusal(sig)) {
    *why = r;
    return 0;
  }
  *why = nullptr;
  return sig;
}

void Warn(const char* name, const char* value, const char* why, const char* using_default) {
  Line line;
  line << "libdump: " << name << "=" << value << " " << why << "; using " << using_default;
  line.Write(STDERR_FILENO);
}

void WarnUint(const char* name, const char* value, const char* why, uint64_t using_default) {
  Line line;
  line << "libdump: " << name << "=" << value << " " << why << "; using " << using_default;
  line.Write(STDERR_FILENO);
}

bool GetBool(const char* name, bool def) {
  const char* v = Get(name);
  if (v == nullptr) return def;
  bool b;
  if (ParseBool(v, &b)) return b;
  Warn(name, v, "is not a boolean (1/0, true/false, yes/no, on/off)", def ? "on" : "off");
  return def;
}

uint64_t GetSize(const char* name, uint64_t def, uint64_t min, uint64_t max) {
  const char* v = Get(name);
  if (v == nullptr) return def;
  uint64_t n;
  if (!ParseSize(v, &n)) {
    WarnUint(name, v, "is not a size (bytes, or with a suffix: 512k, 4M, 1G)", def);
  } else if (n < min || n > max) {
    Line line;
    line << "libdump: " << name << "=" << v << " is out of range (" << min << " to " << max << " bytes); using "
         << def;
    line.Write(STDERR_FILENO);
  } else {
    return n;
  }
  return def;
}

uint64_t GetUint(const char* name, uint64_t def, uint64_t min, uint64_t max) {
  const char* v = Get(name);
  if (v == nullptr) return def;
  uint64_t n;
  if (!ParseUint(v, &n)) {
    WarnUint(name, v, "is not a number", def);
  } else if (n < min || n > max) {
    Line line;
    line << "libdump: " << name << "=" << v << " is out of range (" << min << " to " << max << "); using " << def;
    line.Write(STDERR_FILENO);
  } else {
    return n;
  }
  return def;
}

int GetSignal(const char* name, int def, int taken, const char* taken_by) {
  const char* v = Get(name);
  if (v == nullptr) return def;
  const char* why;
  int sig = ParseSignal(v, &why);
  if (sig != 0 && sig == taken) why = taken_by, sig = 0;
  if (sig != 0) return sig;
  Line line;
  line << "libdump: " << name << "=" << v << " " << why << "; ";
  if (def == 0) {
    line << "ignored";
  } else {
    line << "using ";
    AppendSignal(line, def);
  }
  line.Write(STDERR_FILENO);
  return def;
}

}  // namespace libdump::env
