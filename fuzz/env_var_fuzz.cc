// The LIBDUMP_* parser over any value: every parser either accepts it with a
// value inside its documented range or refuses it; nothing reads past the
// string's end (ASan sees the copy's exact bounds), crashes or loops. The
// allocator reads these before anything else is ready, so a crash here would
// take the whole process down at its first malloc.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>

#include "platform/env/env_var.h"

namespace env = libdump::env;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string value(reinterpret_cast<const char*>(data), size);  // NUL-terminated copy
  const char* s = value.c_str();
  bool b = false;
  (void)env::ParseBool(s, &b);
  uint64_t n = 0;
  if (env::ParseUint(s, &n) && value.find_first_not_of("0123456789") != std::string::npos &&
      value.find('\0') == std::string::npos) {
    __builtin_trap();  // ParseUint takes decimal digits only
  }
  (void)env::ParseSize(s, &n);
  const char* why = nullptr;
  const int sig = env::ParseSignal(s, &why);
  if (sig == 0 && why == nullptr) __builtin_trap();  // a refusal always says why
  if (sig < 0 || sig > 64) __builtin_trap();
  if (sig != 0) (void)env::SignalRefusal(sig);
  return 0;
}
