// A program of plain structs in the standard containers, with known counts,
// for the typing pass's DWARF rule (tests/typing/dwarf_rule_test.sh). Built
// -g -O0; run under LD_PRELOAD=libdump.so with LIBDUMP_HEAPDUMP_SIGNAL=USR2,
// it builds its state, writes "ready" and waits for the signal's dump.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

struct Account {
  long id;
  double balance;
  std::string owner;  // longer than 15 characters: a heap buffer each
};

struct Point {
  int x, y;
};

struct Order {
  long id;
  std::array<Point, 3> corners;
  std::vector<long> lines;
};

// Polymorphic: the dump names each Poly by its vtable; only its dynamic
// class (DWARF's Poly, not the static Shape) says it holds points.
struct Shape {
  virtual ~Shape() = default;
  int sides = 0;
};
struct Poly : Shape {
  std::vector<Point> points;  // 7 each
};

struct Tick {
  long t;
  double v;
};
struct Cell {
  int a, b;
};
struct Pixel {
  long r, g;
};

struct Service {
  std::map<int, Account> accounts;           // 4000 nodes
  std::vector<Order> orders;                 // one body of 2500 Orders, each with a body of 4 longs
  std::unordered_map<long, Point> points;    // 3000 nodes, one bucket array
  std::list<Account> journal;                // 1200 nodes
  std::deque<Point> queue;                   // 30000 Points: a map and 469 blocks of 64
  std::shared_ptr<Order> current;            // make_shared: one control block holding the Order
  std::unique_ptr<Account> owner;
  std::function<long()> callback;            // a functor of 48 bytes: on the heap
  Point* grid;                               // one Point
  std::vector<long> samples;                 // one body of 3000000 longs
  std::vector<std::unique_ptr<Shape>> shapes;  // 10 Polys
  std::optional<std::vector<Tick>> ticks;    // engaged: one body of 9 Ticks
  std::variant<long, std::vector<Cell>, std::string> choice;  // the vector: one body of 11 Cells
  std::unique_ptr<Pixel[]> pixels;           // 25 Pixels (the allocation says how many)
};

Service* g_service;

// An owner name of exactly n characters: capacity n, a heap buffer of n + 1.
std::string Owner(size_t n) { return std::string(n, 'o'); }

int main() {
  auto* s = new Service;
  for (int i = 0; i < 4000; ++i) s->accounts.emplace(i, Account{i, i * 1.5, Owner(20 + i % 10)});
  s->orders.reserve(2500);
  for (int i = 0; i < 2500; ++i) {
    s->orders.push_back(Order{i, {}, {}});
    s->orders.back().lines.reserve(4);
    for (int k = 0; k < 4; ++k) s->orders.back().lines.push_back(k);
  }
  s->points.reserve(3000);
  for (long i = 0; i < 3000; ++i) s->points.emplace(i, Point{int(i), int(i)});
  for (int i = 0; i < 1200; ++i) s->journal.push_back(Account{i, 0, Owner(30 + i % 5)});
  for (int i = 0; i < 30000; ++i) s->queue.push_back(Point{i, i});
  s->current = std::make_shared<Order>();
  s->owner = std::make_unique<Account>(Account{7, 7, Owner(40)});
  struct Big {
    long a, b, c, d, e, f;
    long operator()() const { return a + f; }
  };
  s->callback = Big{1, 2, 3, 4, 5, 6};
  s->grid = new Point{1, 2};
  s->samples.assign(3000000, 3);
  s->shapes.reserve(10);
  for (int i = 0; i < 10; ++i) {
    auto p = std::make_unique<Poly>();
    p->points.reserve(7);
    for (int k = 0; k < 7; ++k) p->points.push_back(Point{i, k});
    s->shapes.push_back(std::move(p));
  }
  s->ticks.emplace(9, Tick{1, 2.5});
  s->choice = std::vector<Cell>(11, Cell{3, 4});
  s->pixels = std::make_unique<Pixel[]>(25);
  g_service = s;
  // Held by main's frame alone: typed through its location (DW_OP_fbreg).
  std::list<Point> local_points;
  for (int i = 0; i < 50; ++i) local_points.push_back(Point{i, -i});
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
