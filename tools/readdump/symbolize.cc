#include "symbolize.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <unordered_map>

#include "input_file.h"
#include "options.h"

namespace libdump::readdump {
namespace {

std::string Demangle(std::string name) {
  // .dynsym names may carry a version (memcpy@GLIBC_2.14).
  name.resize(strcspn(name.c_str(), "@"));
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    if (char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
      name = d;
      std::free(d);
    }
  }
  return name;
}

void PutUtf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | c >> 12);
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// The end (one past the closing quote) of the JSON string starting at
// s[i] == '"'; s.size() if it does not end.
size_t StringEnd(std::string_view s, size_t i) {
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') ++j;
    else if (s[j] == '"') return j + 1;
  }
  return s.size();
}

// The value of the JSON string token s (quotes included).
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] != '\\' || i + 2 >= s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u':
        if (i + 4 < s.size()) {
          PutUtf8(out, static_cast<uint32_t>(std::strtoul(std::string(s.substr(i + 1, 4)).c_str(), nullptr, 16)));
          i += 4;
        }
        break;
      default: out += e;  // \" \\ \/
    }
  }
  return out;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// "0x..." (quotes included): its value, or false.
bool HexToken(std::string_view t, uint64_t* v) {
  if (t.size() < 5 || t.size() > 20 || t[1] != '0' || t[2] != 'x') return false;
  uint64_t x = 0;
  for (size_t i = 3; i + 1 < t.size(); ++i) {
    const char c = t[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    x = x << 4 | static_cast<uint64_t>(d);
  }
  *v = x;
  return true;
}

// Where, in the function the symbol table names, the code at addr is: the
// line table's line, or when addr is in code inlined there, the line of the
// outermost inlined call (a line of the function itself, not of a header
// it inlined). "" without line information.
std::string SourceLine(Dwfl_Module* m, Dwarf_Addr addr) {
  std::string file;
  int line = 0;
  if (Dwfl_Line* l = dwfl_module_getsrc(m, addr)) {
    if (const char* f = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr)) file = f;
  }
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(m, addr, &bias)) {
    Dwarf_Die* scopes = nullptr;
    const int n = dwarf_getscopes(cu, addr - bias, &scopes);
    // Innermost first: the last inlined scope is the outermost call.
    for (int i = n - 1; i >= 0; --i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      Dwarf_Attribute attr;
      Dwarf_Word index = 0, call_line = 0;
      Dwarf_Files* files = nullptr;
      size_t nfiles = 0;
      if (dwarf_attr(&scopes[i], DW_AT_call_file, &attr) != nullptr && dwarf_formudata(&attr, &index) == 0 &&
          dwarf_attr(&scopes[i], DW_AT_call_line, &attr) != nullptr && dwarf_formudata(&attr, &call_line) == 0 &&
          dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && index < nfiles) {
        if (const char* f = dwarf_filesrc(files, index, nullptr, nullptr)) {
          file = f;
          line = static_cast<int>(call_line);
        }
      }
      break;
    }
    free(scopes);
  }
  if (file.empty() || line <= 0) return "";
  return file + ":" + std::to_string(line);
}

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  return i;
}

}  // namespace

struct OfflineSymbolizer::Impl {
  Dwfl* dwfl = nullptr;
  std::unordered_map<uint64_t, std::string> cache;
};

OfflineSymbolizer::OfflineSymbolizer(std::string_view maps) : impl_(new Impl) {
  // Each file's load address: the start of its mapping at file offset 0
  // (its first PT_LOAD).
  std::map<std::string, uint64_t> bases;
  std::istringstream in{std::string(maps)};
  for (std::string line; std::getline(in, line);) {
    unsigned long long lo = 0, hi = 0, off = 0;
    char perms[8];
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &path_at) < 4 ||
        path_at == 0) {
      continue;
    }
    const std::string path = line.substr(static_cast<size_t>(path_at));
    if (path.empty() || path[0] != '/' || path.ends_with(" (deleted)") || off != 0) continue;
    bases.emplace(path, lo);
  }
  static const Dwfl_Callbacks kCallbacks = {
      .find_elf = dwfl_build_id_find_elf,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = nullptr,
  };
  impl_->dwfl = dwfl_begin(&kCallbacks);
  if (impl_->dwfl == nullptr) return;
  dwfl_report_begin(impl_->dwfl);
  for (const auto& [path, base] : bases) {
    // A file that is gone or not ELF is left out: its frames stay hex.
    dwfl_report_elf(impl_->dwfl, path.c_str(), path.c_str(), -1, base, false);
  }
  dwfl_report_end(impl_->dwfl, nullptr, nullptr);
}

OfflineSymbolizer::~OfflineSymbolizer() {
  if (impl_->dwfl != nullptr) dwfl_end(impl_->dwfl);
  delete impl_;
}

std::string OfflineSymbolizer::Name(uint64_t pc) {
  auto it = impl_->cache.find(pc);
  if (it != impl_->cache.end()) return it->second;
  std::string out;
  // A return address: the call is the instruction before it.
  const Dwarf_Addr a = pc - 1;
  Dwfl_Module* m = impl_->dwfl != nullptr && pc != 0 ? dwfl_addrmodule(impl_->dwfl, a) : nullptr;
  if (m != nullptr) {
    GElf_Off offset = 0;
    GElf_Sym sym;
    if (const char* n = dwfl_module_addrinfo(m, a, &offset, &sym, nullptr, nullptr, nullptr)) {
      out = Demangle(n);
      if (const std::string where = SourceLine(m, a); !where.empty()) out += " (" + where + ")";
    }
  }
  impl_->cache.emplace(pc, out);
  return out;
}

std::string TraceMaps(std::string_view trace) {
  const std::string_view key = "\"maps\":";
  const size_t at = trace.rfind(key);  // in otherData, after the events
  if (at == std::string_view::npos) return "";
  const size_t q = SkipSpace(trace, at + key.size());
  if (q >= trace.size() || trace[q] != '"') return "";
  return Unescape(trace.substr(q, StringEnd(trace, q) - q));
}

std::string RewriteStacks(std::string_view trace, OfflineSymbolizer& names, SymbolizeCounts* counts) {
  std::string out;
  out.reserve(trace.size() + trace.size() / 2);
  bool in_stack = false;
  for (size_t i = 0; i < trace.size();) {
    const char c = trace[i];
    if (c != '"') {
      if (c == ']') in_stack = false;
      out += c;
      ++i;
      continue;
    }
    const size_t end = StringEnd(trace, i);
    const std::string_view token = trace.substr(i, end - i);
    uint64_t pc;
    if (in_stack && HexToken(token, &pc)) {
      ++counts->hex;
      const std::string name = names.Name(pc);
      if (!name.empty()) ++counts->named;
      out += name.empty() ? std::string(token) : Quote(name);
    } else {
      out += token;
    }
    i = end;
    if (token == "\"stack\"") {
      // "stack": [ ... ]: the strings up to the closing bracket are frames.
      const size_t colon = SkipSpace(trace, i);
      if (colon < trace.size() && trace[colon] == ':') {
        const size_t open = SkipSpace(trace, colon + 1);
        if (open < trace.size() && trace[open] == '[') {
          out += trace.substr(i, open + 1 - i);
          i = open + 1;
          in_stack = true;
        }
      }
    }
  }
  return out;
}

int RunSymbolize(const Options& o) {
  const std::string name = o.file == "-" ? "<stdin>" : o.file;
  std::string text;
  try {
    tools::InputFile input(o.file);
    const int fd = input.TakeFd();
    char buf[1 << 16];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(fd);
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << '\n';
    return 1;
  }
  const std::string maps = TraceMaps(text);
  if (maps.empty()) {
    std::cerr << name << ": not a flight recorder trace with the process's maps (otherData.maps)\n";
    return 1;
  }
  OfflineSymbolizer names(maps);
  SymbolizeCounts counts;
  const std::string named = RewriteStacks(text, names, &counts);
  std::cout << named;
  std::cout.flush();
  std::cerr << "readdump: " << name << ": named " << counts.named << " of " << counts.hex << " hex frames\n";
  return std::cout ? 0 : 1;
}

}  // namespace libdump::readdump
