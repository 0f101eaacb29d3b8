// A JSON writer for Trace Event files that is safe in a signal handler: it
// formats into a fixed buffer (the caller's, typically on the stack) and
// flushes it with write(2); no allocation, no locale, no stdio.
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
