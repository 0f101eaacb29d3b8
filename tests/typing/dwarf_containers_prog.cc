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
#include <string>
#include <unordered_map>
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

struct Service {
  std::map<int, Account> accounts;                 // 40 nodes
  std::vector<Order> orders;                       // one body of 25 Orders, each with a body of 4 longs
  std::unordered_map<long, Point> points;          // 30 nodes, one bucket array
  std::list<Account> journal;                      // 12 nodes
  std::deque<Point> queue;                         // 300 Points: a map and 3 blocks of 64
  std::shared_ptr<Order> current;                  // make_shared: one control block holding the Order
  std::unique_ptr<Account> owner;
  std::function<long()> callback;                  // a functor of 48 bytes: on the heap
  Point* grid;                                     // new Point[...]: 8 bytes each
};

Service* g_service;

int main() {
  auto* s = new Service;
  for (int i = 0; i < 40; ++i) {
    s->accounts[i] = Account{i, i * 1.5, "account owner number " + std::to_string(i)};
  }
  s->orders.reserve(25);
  for (int i = 0; i < 25; ++i) {
    s->orders.push_back(Order{i, {}, {}});
    s->orders.back().lines.reserve(4);
    for (int k = 0; k < 4; ++k) s->orders.back().lines.push_back(k);
  }
  for (long i = 0; i < 30; ++i) s->points[i] = Point{int(i), int(i)};
  for (int i = 0; i < 12; ++i) s->journal.push_back(Account{i, 0, "journal entry owner " + std::to_string(i)});
  for (int i = 0; i < 300; ++i) s->queue.push_back(Point{i, i});
  s->current = std::make_shared<Order>();
  s->owner = std::make_unique<Account>(Account{7, 7, "the owner of the service"});
  struct Big {
    long a, b, c, d, e, f;
    long operator()() const { return a + f; }
  };
  s->callback = Big{1, 2, 3, 4, 5, 6};
  s->grid = new Point;
  g_service = s;
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
