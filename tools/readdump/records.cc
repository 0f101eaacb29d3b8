#include "records.h"

#include "escape.h"
#include "record_fields.h"

namespace libdump::readdump {
namespace {

class TextSink final : public FieldSink {
 public:
  explicit TextSink(std::ostream& out) : out_(out) {}
  void Hex(const char* key, uint64_t v) override { Put(key, HexString(v)); }
  void Dec(const char* key, uint64_t v) override { Put(key, std::to_string(v)); }
  void Bool(const char* key, bool v) override { Put(key, v ? "true" : "false"); }
  void Str(const char* key, std::string_view v) override { Put(key, QuoteText(v)); }
  void Name(const char* key, std::string_view v) override { Put(key, v); }
  void BeginList(const char* key) override {
    Put(key, "[");
    first_ = true;
  }
  void EndList() override {
    out_ << ']';
    first_ = false;
  }
  void BeginItem() override {
    if (!first_) out_ << ' ';
    out_ << '{';
    first_ = true;
  }
  void EndItem() override {
    out_ << '}';
    first_ = false;
  }

 private:
  // Values are separated by one space, except right after an opening bracket.
  void Put(const char* key, std::string_view v) {
    if (!first_) out_ << ' ';
    first_ = false;
    if (key != nullptr) out_ << key << '=';
    out_ << v;
  }
  std::ostream& out_;
  bool first_ = false;
};

class JsonSink final : public FieldSink {
 public:
  explicit JsonSink(JsonWriter& json) : json_(json) {}
  void Hex(const char* key, uint64_t v) override { K(key); json_.Hex(v); }
  void Dec(const char* key, uint64_t v) override { K(key); json_.Uint(v); }
  void Bool(const char* key, bool v) override { K(key); json_.Bool(v); }
  void Str(const char* key, std::string_view v) override { K(key); json_.String(v); }
  void Name(const char* key, std::string_view v) override { K(key); json_.String(v); }
  void BeginList(const char* key) override { K(key); json_.BeginArray(); }
  void EndList() override { json_.EndArray(); }
  void BeginItem() override { json_.BeginObject(); }
  void EndItem() override { json_.EndObject(); }

 private:
  void K(const char* key) {
    if (key != nullptr) json_.Key(key);
  }
  JsonWriter& json_;
};

}  // namespace

void PrintRecordLine(std::ostream& out, const format::Record& r) {
  out << format::KindName(r.kind) << " at=" << r.offset;
  TextSink sink(out);
  VisitFields(r, sink);
  out << '\n';
}

void WriteRecordJson(JsonWriter& json, const format::Record& r) {
  json.BeginObject();
  json.Key("record");  // not "kind": objects have a field of that name
  json.String(format::KindName(r.kind));
  json.Field("at", r.offset);
  JsonSink sink(json);
  VisitFields(r, sink);
  json.EndObject();
}

}  // namespace libdump::readdump
