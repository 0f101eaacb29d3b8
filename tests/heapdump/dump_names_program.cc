// The program of heapdump_names.sh: a thread parked in std::getline on
// stdin (a demangled name of ~250 bytes), one in pthread_cond_wait, and a
// thousand polymorphic objects, one class with a name of several KiB. It
// prints the names a dump of it must carry byte for byte: the getline frame's
// and the classes' (demangled here, independently of libdump) and its threads'.
#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual int Area() const = 0;
};
struct Square : Shape {
  int side = 2;
  int Area() const override { return side * side; }
};
template <class A, class B, class C, class D>
struct ShapeWithAVeryLongTemplatedName : Shape {
  int Area() const override { return 1; }
};
using Long = ShapeWithAVeryLongTemplatedName<
    std::vector<std::pair<std::string, std::string>>, std::vector<std::pair<std::wstring, std::u16string>>,
    std::vector<std::pair<std::u32string, std::string>>, std::vector<std::vector<std::vector<std::string>>>>;

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
std::vector<std::unique_ptr<Shape>> g_shapes;

void* Reader(void*) {
  pthread_setname_np(pthread_self(), "line-reader");
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return nullptr;
}

void* Waiter(void*) {
  pthread_setname_np(pthread_self(), "cond-waiter");
  pthread_mutex_lock(&g_mu);
  for (;;) pthread_cond_wait(&g_cv, &g_mu);
}

std::string Demangled(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = d != nullptr ? d : mangled;
  std::free(d);
  return out;
}

}  // namespace

int main() {
  for (int i = 0; i < 1000; ++i) {
    if (i % 2 != 0) {
      g_shapes.emplace_back(new Square);
    } else {
      g_shapes.emplace_back(new Long);
    }
  }
  pthread_t reader, waiter;
  pthread_create(&reader, nullptr, Reader, nullptr);
  pthread_create(&waiter, nullptr, Waiter, nullptr);
  // The frame the reader parks in: getline(is, str) calls getline(is, str, delim).
  using Getline = std::istream& (*)(std::istream&, std::string&, char);
  const Getline getline3 = &std::getline<char, std::char_traits<char>, std::allocator<char>>;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(getline3), &info) == 0 || info.dli_sname == nullptr) {
    std::fprintf(stderr, "dladdr found no symbol for std::getline\n");
    return 1;
  }
  std::printf("frame %s\n", Demangled(info.dli_sname).c_str());
  std::printf("type %s\n", Demangled(typeid(Square).name()).c_str());
  std::printf("type %s\n", Demangled(typeid(Long).name()).c_str());
  char self[16] = {};
  pthread_getname_np(pthread_self(), self, sizeof self);
  std::printf("thread %s\nthread line-reader\nthread cond-waiter\nready\n", self);
  std::fflush(stdout);
  pthread_join(reader, nullptr);
  g_shapes.clear();
  return 0;
}
