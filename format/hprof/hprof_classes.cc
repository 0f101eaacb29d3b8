#include "libdump/format/hprof_classes.h"

#include <stdexcept>

namespace libdump::format::hprof {

Id StringTable::Intern(std::string_view text) {
  auto [it, inserted] = ids_by_text_.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = ids_.Next();
    writer_.Utf8(it->second, text);
  }
  return it->second;
}

Id ClassTable::Add(std::string_view name, Id super, std::span<const FieldSpec> fields, uint32_t instance_size) {
  if (super != 0 && !entries_.contains(super)) throw std::logic_error("hprof: superclass declared after its subclass");
  const Id id = ids_.Next();
  Entry e;
  e.serial = next_serial_++;
  e.data_size = super != 0 ? entries_.at(super).data_size : 0;
  e.dump.id = id;
  e.dump.trace = kEmptyTrace;
  e.dump.super = super;
  for (const FieldSpec& f : fields) {
    e.dump.fields.push_back({strings_.Intern(f.name), f.type});
    e.data_size += TypeSize(f.type);
  }
  e.dump.instance_size = instance_size != 0 ? instance_size : static_cast<uint32_t>(16 + e.data_size);
  writer_.LoadClass(e.serial, id, kEmptyTrace, strings_.Intern(name));
  entries_.emplace(id, std::move(e));
  order_.push_back(id);
  return id;
}

void ClassTable::SetStatics(Id class_id, std::vector<StaticField> statics) {
  if (statics.size() > UINT16_MAX) throw std::length_error("hprof: more than 65535 static fields");
  entries_.at(class_id).dump.statics = std::move(statics);
}

void ClassTable::DumpAll() {
  for (Id id : order_) writer_.ClassDump(entries_.at(id).dump);
}

}  // namespace libdump::format::hprof
