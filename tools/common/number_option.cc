#include "number_option.h"

#include <charconv>

namespace libdump::tools {

std::optional<uint64_t> ParseUintOption(std::string_view s, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < min || v > max) return std::nullopt;
  return v;
}

}  // namespace libdump::tools
