#include "type_name.h"

#include <vector>

namespace libdump::typing {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }
bool IsIntWord(std::string_view w) {
  return w == "unsigned" || w == "signed" || w == "short" || w == "long" || w == "int" || w == "char" || w == "double";
}

}  // namespace

std::string NormalizeTypeName(std::string_view s) {
  std::vector<std::string_view> toks;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c >= '0' && c <= '9') {
      size_t j = i;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
      toks.push_back(s.substr(i, j - i));
      while (j < s.size() && (s[j] == 'u' || s[j] == 'U' || s[j] == 'l' || s[j] == 'L')) ++j;  // 5ul: 5
      i = j;
    } else if (IsAlnum(c)) {
      size_t j = i;
      while (j < s.size() && IsAlnum(s[j])) ++j;
      toks.push_back(s.substr(i, j - i));
      i = j;
    } else {
      toks.push_back(s.substr(i, 1));
      ++i;
    }
  }
  std::string out;
  auto put = [&](std::string_view w) {
    if (!out.empty() && IsAlnum(out.back()) && IsAlnum(w.front())) out += ' ';
    out += w;
  };
  for (size_t i = 0; i < toks.size();) {
    if (toks[i] == "const" || toks[i] == "volatile") {
      ++i;
      continue;
    }
    if (!IsIntWord(toks[i])) {
      put(toks[i++]);
      continue;
    }
    int longs = 0;
    bool is_unsigned = false, is_signed = false, is_short = false, is_char = false, is_double = false;
    for (; i < toks.size() && (IsIntWord(toks[i]) || toks[i] == "const"); ++i) {
      const std::string_view w = toks[i];
      longs += w == "long";
      is_unsigned |= w == "unsigned";
      is_signed |= w == "signed";
      is_short |= w == "short";
      is_char |= w == "char";
      is_double |= w == "double";
    }
    if (is_char) {
      put(is_signed ? "signed char" : is_unsigned ? "unsigned char" : "char");
    } else if (is_double) {
      put(longs ? "long double" : "double");
    } else {
      if (is_unsigned) put("unsigned");
      put(is_short ? "short" : longs == 1 ? "long" : longs >= 2 ? "long long" : "int");
    }
  }
  return out;
}

}  // namespace libdump::typing
