// --records: one line per record ("KIND at=OFFSET key=value ..."), or one JSON
// object per record.
#pragma once

#include <ostream>

#include "json_writer.h"
#include "libdump/format/record.h"

namespace libdump::readdump {

void PrintRecordLine(std::ostream& out, const format::Record& r);
void WriteRecordJson(JsonWriter& json, const format::Record& r);

}  // namespace libdump::readdump
