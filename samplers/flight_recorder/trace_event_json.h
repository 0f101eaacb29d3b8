// The flight recorder's window as a Trace Event file (docs/FLIGHT_RECORDER.md),
// and the JSON writer under it, safe in a signal handler: it formats into a
// fixed buffer (the caller's, typically on the stack) and flushes it with
// write(2); no allocation, no locale, no stdio.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace libdump::samplers {

class JsonOut {
 public:
  JsonOut(int fd, char* buf, size_t cap) : fd_(fd), buf_(buf), cap_(cap) {}
  ~JsonOut() { Flush(); }
  JsonOut(const JsonOut&) = delete;
  JsonOut& operator=(const JsonOut&) = delete;

  void Raw(std::string_view s);
  // A quoted string: ", \ and control characters escaped, invalid UTF-8
  // replaced by U+FFFD, so any bytes give valid JSON.
  void String(std::string_view s);
  // The inside of a string, for one written in pieces between two Raw("\"").
  void Escaped(std::string_view s);
  void Int(int64_t v);
  void Uint(uint64_t v);
  // Nanoseconds as microseconds with three decimals (the format's unit).
  void Micros(int64_t ns);
  void Hex(uint64_t v);  // "0x..." quoted

  void Flush();
  bool ok() const { return error_ == 0; }
  int error() const { return error_; }
  int64_t written() const { return written_ + static_cast<int64_t>(len_); }

 private:
  void Put(char c) {
    if (len_ == cap_) Flush();
    buf_[len_++] = c;
  }
  int fd_;
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  int64_t written_ = 0;
  int error_ = 0;
};

}  // namespace libdump::samplers

namespace libdump::samplers::flight {

class Window;
class Namer;

inline constexpr size_t kTaskSet = 4096;  // ended tasks a snapshot can tell from open ones

// The whole window as Trace Event JSON to fd, the window pinned meanwhile
// (order: one entry per chunk; task_set: kTaskSet words of scratch).
// Allocates nothing unless the namer does (null: frames in hex); the caller
// holds the writer lock. Bytes written, or -1 with errno.
int64_t WriteTraceEvents(Window& w, uint32_t* order, uint64_t* task_set, int fd, int sig, Namer* namer);

}  // namespace libdump::samplers::flight
