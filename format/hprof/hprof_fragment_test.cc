// Writer fragments: sub-records encoded apart and appended in order make the
// very bytes of writing them into the file's writer one by one, segment
// splits included.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof {
namespace {

// The i-th sub-record of a varied heap: roots, instances, object arrays and
// primitive arrays of up to ~5 KiB, some streamed in pieces.
void Put(Writer& w, uint64_t i) {
  const Id id = 0x1000 + 16 * i;
  switch (i % 5) {
    case 0: w.RootUnknown(id); break;
    case 1: {
      std::vector<uint8_t> data(i % 40, static_cast<uint8_t>(i));
      w.Instance(id, 1, 0x99, data);
      break;
    }
    case 2: {
      std::vector<Id> ids(i % 300, id);
      w.ObjectArray(id, 1, 0x98, ids);
      break;
    }
    case 3: {
      const uint32_t n = static_cast<uint32_t>((i * 131) % 5000);
      std::vector<uint8_t> bytes(n, static_cast<uint8_t>(i));
      w.BeginPrimitiveArray(id, 1, Type::kByte, n);
      w.Raw(std::span(bytes).first(n / 3));
      w.Raw(std::span(bytes).subspan(n / 3));
      break;
    }
    case 4: w.RootJavaFrame(id, 2, static_cast<uint32_t>(i)); break;
  }
}

std::string Direct(uint64_t n, WriterOptions options) {
  StringOutput out;
  Writer w(out, options);
  for (uint64_t i = 0; i < n; ++i) Put(w, i);
  w.HeapDumpEnd();
  return out.data();
}

// Fragments of `per` sub-records, two of them taking turns as threads' would.
std::string Fragments(uint64_t n, uint64_t per, WriterOptions options, size_t fragment_buffer) {
  StringOutput out;
  Writer w(out, options);
  Writer a(Writer::Fragment{}, fragment_buffer), b(Writer::Fragment{}, fragment_buffer);
  Writer* f[2] = {&a, &b};
  for (uint64_t start = 0, k = 0; start < n; start += per, ++k) {
    Writer& frag = *f[k % 2];
    frag.Clear();
    for (uint64_t i = start; i < std::min(n, start + per); ++i) Put(frag, i);
    w.Append(frag);
  }
  w.HeapDumpEnd();
  return out.data();
}

TEST(HprofFragment, AppendedFragmentsAreTheBytesOfWritingDirectly) {
  for (uint64_t max_segment : {uint64_t{1} << 30, uint64_t{4096}, uint64_t{100}}) {
    for (size_t buffer : {size_t{64}, size_t{8192}, size_t{1} << 20}) {
      const WriterOptions options{.max_segment = max_segment, .buffer_size = buffer};
      const std::string want = Direct(2000, options);
      for (uint64_t per : {1, 7, 100, 2000}) {
        EXPECT_EQ(Fragments(2000, per, options, 64), want)
            << "segment " << max_segment << " buffer " << buffer << " per " << per;
      }
    }
  }
}

TEST(HprofFragment, KeepsWhatIsWrittenAndClearEmptiesIt) {
  Writer f(Writer::Fragment{}, 64);
  EXPECT_TRUE(f.fragment_bytes().empty());
  f.RootUnknown(7);
  std::vector<uint8_t> big(100000, 3);
  f.BeginPrimitiveArray(8, 1, Type::kByte, static_cast<uint32_t>(big.size()));
  f.Raw(big);
  EXPECT_EQ(f.fragment_bytes().size(), 9u + 18u + big.size());
  EXPECT_EQ(f.fragment_bytes()[0], kRootUnknown);
  f.Clear();
  EXPECT_TRUE(f.fragment_bytes().empty());
}

TEST(HprofFragment, MisuseIsALogicError) {
  Writer f(Writer::Fragment{}, 64);
  EXPECT_THROW(f.Utf8(1, "x"), std::logic_error);
  EXPECT_THROW(f.HeapDumpEnd(), std::logic_error);
  StringOutput out;
  Writer w(out);
  f.BeginObjectArray(9, 1, 0x98, 2);
  EXPECT_THROW(w.Append(f), std::logic_error);  // an unfinished array
  Writer g(Writer::Fragment{}, 64);
  EXPECT_THROW(g.Append(f), std::logic_error);  // into a fragment
  EXPECT_THROW(w.Clear(), std::logic_error);
}

}  // namespace
}  // namespace libdump::format::hprof
