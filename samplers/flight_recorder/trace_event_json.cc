#include "samplers/flight_recorder/trace_event_json.h"

#include <errno.h>
#include <unistd.h>

namespace libdump::samplers {

void JsonOut::Flush() {
  size_t off = 0;
  while (off < len_ && error_ == 0) {
    const ssize_t n = write(fd_, buf_ + off, len_ - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
    } else {
      off += static_cast<size_t>(n);
    }
  }
  written_ += static_cast<int64_t>(off);
  len_ = 0;
}

void JsonOut::Raw(std::string_view s) {
  for (char c : s) Put(c);
}

namespace {
// Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or 0.
size_t Utf8Length(const unsigned char* s, size_t n) {
  const unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
  else return 0;
  if (n < len) return 0;
  unsigned cp = c & (0xff >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}
}  // namespace

void JsonOut::String(std::string_view s) {
  Put('"');
  Escaped(s);
  Put('"');
}

void JsonOut::Escaped(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      Put('\\');
      Put(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      Raw("\\u00");
      Put(kHex[c >> 4]);
      Put(kHex[c & 15]);
      ++i;
    } else if (c < 0x80) {
      Put(static_cast<char>(c));
      ++i;
    } else if (const size_t len = Utf8Length(p + i, s.size() - i); len != 0) {
      for (size_t k = 0; k < len; ++k) Put(static_cast<char>(p[i + k]));
      i += len;
    } else {
      Raw("\\ufffd");
      ++i;
    }
  }
}

void JsonOut::Uint(uint64_t v) {
  char d[20];
  int n = 0;
  do {
    d[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) Put(d[--n]);
}

void JsonOut::Int(int64_t v) {
  if (v < 0) {
    Put('-');
    Uint(static_cast<uint64_t>(0) - static_cast<uint64_t>(v));
  } else {
    Uint(static_cast<uint64_t>(v));
  }
}

void JsonOut::Micros(int64_t ns) {
  if (ns < 0) {
    Put('-');
    ns = -ns;
  }
  Uint(static_cast<uint64_t>(ns / 1000));
  const int frac = static_cast<int>(ns % 1000);
  Put('.');
  Put(static_cast<char>('0' + frac / 100));
  Put(static_cast<char>('0' + frac / 10 % 10));
  Put(static_cast<char>('0' + frac % 10));
}

void JsonOut::Hex(uint64_t v) {
  static const char kHex[] = "0123456789abcdef";
  char d[16];
  int n = 0;
  do {
    d[n++] = kHex[v & 15];
    v >>= 4;
  } while (v != 0);
  Raw("\"0x");
  while (n > 0) Put(d[--n]);
  Put('"');
}

}  // namespace libdump::samplers
