// Polymorphic objects of known counts for coredump_polymorphic.sh: 300
// shapes::Circle (single inheritance), 200 shapes::Labelled (multiple), 100
// of a class in an anonymous namespace. Writes READY_FILE and waits until
// DONE_FILE exists (at most 60 s).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace shapes {
struct Shape {
  virtual ~Shape() = default;
  virtual double Area() const = 0;
};
struct Named {
  virtual ~Named() = default;
  const char* name = "n";
};
struct Circle : Shape {
  double r = 1;
  double Area() const override { return 3.14 * r * r; }
};
struct Labelled : Shape, Named {
  double w = 2, h = 3;
  double Area() const override { return w * h; }
};
}  // namespace shapes

namespace {
struct Hidden : shapes::Shape {
  long payload[4] = {};
  double Area() const override { return 0; }
};
}  // namespace

std::vector<shapes::Shape*> g_shapes;

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  for (int i = 0; i < 300; ++i) g_shapes.push_back(new shapes::Circle);
  for (int i = 0; i < 200; ++i) g_shapes.push_back(new shapes::Labelled);
  for (int i = 0; i < 100; ++i) g_shapes.push_back(new Hidden);
  if (FILE* f = std::fopen(argv[1], "w")) std::fclose(f);
  struct stat st;
  for (int k = 0; k < 600 && stat(argv[2], &st) != 0; ++k) usleep(100 * 1000);
  return 0;
}
