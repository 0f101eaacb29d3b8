// libdump::format: writes and reads back a one-record dump.
#include <sstream>

#include "libdump/format/reader.h"
#include "libdump/format/writer.h"

int main() {
  std::ostringstream out;
  libdump::format::OstreamSink sink(out);
  {
    libdump::format::Writer w(sink);
    w.Header();
    w.Eof();
  }
  std::istringstream in(out.str());
  libdump::format::Reader r(in);
  libdump::format::Record rec;
  return r.Next(rec) && rec.kind == libdump::format::Kind::kEof && !r.Next(rec) ? 0 : 1;
}
