#include "json_writer.h"

#include <cstdio>

#include "escape.h"

namespace libdump::readdump {

void JsonWriter::Indent() {
  out_ << '\n';
  for (size_t i = 0; i < empty_.size(); ++i) out_ << "  ";
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;
  if (!empty_.back()) out_ << ',';
  empty_.back() = false;
  Indent();
}

void JsonWriter::Key(std::string_view key) {
  BeforeValue();
  out_ << QuoteJson(key) << ": ";
  after_key_ = true;
}

void JsonWriter::Open(char c) {
  BeforeValue();
  out_ << c;
  empty_.push_back(true);
  closers_.push_back(c == '{' ? '}' : ']');
  started_ = true;
}

void JsonWriter::Close(char c) {
  const bool was_empty = empty_.back();
  empty_.pop_back();
  closers_.pop_back();
  if (!was_empty) Indent();
  out_ << c;
}

void JsonWriter::CloseTo(size_t depth) {
  if (after_key_) Null();
  while (closers_.size() > depth) Close(closers_.back());
}

void JsonWriter::String(std::string_view s) {
  BeforeValue();
  out_ << QuoteJson(s);
}

void JsonWriter::Uint(uint64_t v) {
  BeforeValue();
  out_ << v;
}

void JsonWriter::Hex(uint64_t v) {
  BeforeValue();
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(v));
  out_ << buf;
}

void JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ << (v ? "true" : "false");
}

void JsonWriter::Null() {
  BeforeValue();
  out_ << "null";
}

}  // namespace libdump::readdump
