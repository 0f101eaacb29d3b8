// A minimal streaming JSON writer: readdump's documents can be as long as the
// dump has records, so nothing is built in memory. Addresses are written as
// "0x..." strings because JSON numbers lose precision above 2^53 in most
// consumers (jq, JavaScript); counts and sizes are plain numbers.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace libdump::readdump {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  // The key of the next value inside an object.
  void Key(std::string_view key);

  void String(std::string_view s);
  void Uint(uint64_t v);
  void Hex(uint64_t v);
  void Bool(bool v);
  void Null();
  // A key and its value: the form nearly every field takes.
  void Field(std::string_view key, uint64_t v) {
    Key(key);
    Uint(v);
  }
  void Field(std::string_view key, std::string_view s) {
    Key(key);
    String(s);
  }

  // Ends the document with a newline.
  void Finish() { out_ << '\n'; }

  // Whether the document has been started (its outermost container opened).
  bool started() const { return started_; }
  // How many containers are open.
  size_t depth() const { return closers_.size(); }
  // Closes what is open down to `depth` containers (a key left without a
  // value gets null), so that a run cut short still ends a valid document.
  void CloseTo(size_t depth);

 private:
  void Open(char c);
  void Close(char c);
  void BeforeValue();
  void Indent();

  std::ostream& out_;
  std::vector<bool> empty_;  // per open container: nothing written into it yet
  std::string closers_;      // per open container: '}' or ']'
  bool started_ = false;
  bool after_key_ = false;
};

}  // namespace libdump::readdump
