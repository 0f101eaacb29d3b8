#include "html.h"

#include <charconv>

namespace libdump::heapview {

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
    }
    if (c < 0x80) {
      if (c < 0x20 && c != '\n' && c != '\t') {
        out += "\xEF\xBF\xBD";
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes checked.
    const size_t n = c >= 0xF5 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    bool ok = n != 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && n > 2) {
      // The second byte's narrower range: no overlong form, no surrogate
      // (U+D800-DFFF), nothing past U+10FFFF.
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 > 0x9F) && !(c == 0xF0 && c1 < 0x90) &&
           !(c == 0xF4 && c1 > 0x8F);
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string UrlDecode(std::string_view s) {
  std::string out;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) << 4 | hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string Target::Get(const std::string& key, const std::string& fallback) const {
  auto it = query.find(key);
  return it == query.end() ? fallback : it->second;
}

uint64_t Target::GetUint(const std::string& key, uint64_t fallback) const {
  const std::string v = Get(key);
  uint64_t x;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && end == v.data() + v.size() && !v.empty() ? x : fallback;
}

Target ParseTarget(std::string_view target) {
  Target t;
  const size_t q = target.find('?');
  t.path = UrlDecode(target.substr(0, q));
  if (q == std::string_view::npos) return t;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view kv = rest.substr(0, amp);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      t.query[UrlDecode(kv)] = "";
    } else {
      t.query[UrlDecode(kv.substr(0, eq))] = UrlDecode(kv.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return t;
}

std::string Thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace libdump::heapview
