#include "vtable_types.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace demo {
struct Shape { virtual ~Shape() = default; virtual double Area() const = 0; };
struct Circle : Shape { double r = 1; double Area() const override { return 3.14 * r * r; } };
struct Named { virtual ~Named() = default; std::string name; };
struct NamedCircle : Circle, Named {};
template <class T> struct Box : Shape { T v{}; double Area() const override { return 0; } };
struct Plain { long a = 0, b = 0; };
}  // namespace demo

namespace libdump::heapdump {
namespace {

uint64_t FirstWord(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

TEST(VtableRecognizer, NamesPolymorphicObjectsOfEveryRttiKind) {
  capture::MemoryMap memory;
  ASSERT_TRUE(memory.Read());
  VtableRecognizer rec;
  auto circle = std::make_unique<demo::Circle>();
  auto multi = std::make_unique<demo::NamedCircle>();
  auto box = std::make_unique<demo::Box<int>>();
  uint64_t ti = rec.TypeInfoOf(FirstWord(circle.get()), memory);
  ASSERT_NE(ti, 0u);
  EXPECT_EQ(VtableRecognizer::ClassName(ti), "demo::Circle");
  ti = rec.TypeInfoOf(FirstWord(multi.get()), memory);
  ASSERT_NE(ti, 0u);
  EXPECT_EQ(VtableRecognizer::ClassName(ti), "demo::NamedCircle");
  ti = rec.TypeInfoOf(FirstWord(box.get()), memory);
  ASSERT_NE(ti, 0u);
  EXPECT_EQ(VtableRecognizer::ClassName(ti), "demo::Box<int>");
}

TEST(VtableRecognizer, RejectsWordsThatAreNotVtablePointers) {
  capture::MemoryMap memory;
  ASSERT_TRUE(memory.Read());
  VtableRecognizer rec;
  auto plain = std::make_unique<demo::Plain>();
  plain->a = reinterpret_cast<long>(plain.get());  // a heap pointer
  EXPECT_EQ(rec.TypeInfoOf(FirstWord(plain.get()), memory), 0u);
  static const char text[] = "not a vtable, just read-only bytes";
  EXPECT_EQ(rec.TypeInfoOf(reinterpret_cast<uint64_t>(text) + 16, memory), 0u);
  EXPECT_EQ(rec.TypeInfoOf(0, memory), 0u);
  EXPECT_EQ(rec.TypeInfoOf(~0ull - 7, memory), 0u);
  EXPECT_EQ(rec.TypeInfoOf(0x1000, memory), 0u);
}

}  // namespace
}  // namespace libdump::heapdump
