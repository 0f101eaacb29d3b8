// The flight recorder: the last seconds of a process's trace data, kept in a
// bounded window and written out on demand or as the process crashes (like
// Go 1.25's runtime/trace.FlightRecorder, and Java's JFR).
//
// The window holds regions, tasks and log messages the program annotates,
// thread names and lifetimes, heap statistics every 100 ms and CPU samples
// with stacks. WriteTo writes it as Trace Event JSON, which ui.perfetto.dev,
// chrome://tracing and speedscope open (docs/FLIGHT_RECORDER.md).
//
// Annotations cost one relaxed load and a branch while no recorder runs.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Non-zero while a recorder runs; read relaxed (libdump_trace_enabled).
extern unsigned char libdump_trace_on;

static inline int libdump_trace_enabled(void) { return __atomic_load_n(&libdump_trace_on, __ATOMIC_RELAXED) != 0; }

// The recording halves of the annotations below, for when one runs.
int64_t libdump_region_begin_slow(const char* name, uint64_t task);
void libdump_region_end_slow(const char* name, int64_t begin, uint64_t task);
uint64_t libdump_task_begin_slow(const char* name, uint64_t parent, int64_t* begin);
void libdump_task_end_slow(const char* name, uint64_t id, int64_t begin);
void libdump_trace_log_slow(const char* category, const char* message, uint64_t task);
// Interned region names: libdump_trace_intern copies name once and returns
// its id (0 if the process's table of 4096 names is full); a region named
// by id records 4 bytes instead of its name. Keep the id in a static per
// call site (libdump::trace::Name does).
uint32_t libdump_trace_intern(const char* name);
int64_t libdump_region_begin_id_slow(uint32_t name_id, uint64_t task);
void libdump_region_end_id_slow(uint32_t name_id, int64_t begin, uint64_t task);

// The C API, inline so that an annotation costs a load and a branch while
// no recorder runs. A region is begun into a caller-owned struct and ended
// from it; name must outlive it.
typedef struct libdump_region {
  const char* name;
  uint64_t task;
  int64_t begin;  // 0: not recorded
} libdump_region;

static inline void libdump_region_begin(libdump_region* r, const char* name, uint64_t task) {
  r->name = name;
  r->task = task;
  r->begin = __builtin_expect(libdump_trace_enabled(), 0) ? libdump_region_begin_slow(name, task) : 0;
}
static inline void libdump_region_end(libdump_region* r) {
  if (r->begin != 0) libdump_region_end_slow(r->name, r->begin, r->task);
  r->begin = 0;
}
// Returns the task id (0 when not recording); *begin is for the end.
static inline uint64_t libdump_task_begin(const char* name, uint64_t parent, int64_t* begin) {
  *begin = 0;
  return __builtin_expect(libdump_trace_enabled(), 0) ? libdump_task_begin_slow(name, parent, begin) : 0;
}
static inline void libdump_task_end(const char* name, uint64_t id, int64_t begin) {
  if (id != 0) libdump_task_end_slow(name, id, begin);
}
static inline void libdump_trace_log(const char* category, const char* message, uint64_t task) {
  if (__builtin_expect(libdump_trace_enabled(), 0)) libdump_trace_log_slow(category, message, task);
}

#ifdef __cplusplus
}  // extern "C"

#include <chrono>

namespace libdump {

class FlightRecorder {
 public:
  FlightRecorder() = default;
  ~FlightRecorder();  // stops it if it runs
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Events younger than MinAge stay in the window unless MaxBytes needs
  // their memory; older ones are dropped. Settings apply at the next Start.
  void SetMinAge(std::chrono::nanoseconds d) { min_age_ = d; }
  std::chrono::nanoseconds MinAge() const { return min_age_; }
  // The memory of the window's buffers, which takes precedence over
  // MinAge (the oldest events go first). At least 128 KiB.
  void SetMaxBytes(uint64_t bytes) { max_bytes_ = bytes; }
  uint64_t MaxBytes() const { return max_bytes_; }

  // Starts recording. False (errno EBUSY) if a flight recorder already
  // runs in the process, ENOMEM if the window cannot be mapped.
  bool Start();
  // Stops recording; waits for a WriteTo in progress. False (errno
  // EINVAL) if this recorder was not running.
  bool Stop();
  bool Enabled() const;

  // Writes the window as Trace Event JSON. Returns the bytes written, or
  // -1 with errno: EBUSY if another WriteTo is in progress, EINVAL if the
  // recorder is not running, or the write(2) error.
  int64_t WriteTo(int fd);
  // Writes the window's CPU samples as a gzipped pprof profile. False with
  // errno as for WriteTo.
  bool WriteCPUProfileTo(int fd);

 private:
  std::chrono::nanoseconds min_age_ = std::chrono::seconds(10);
  uint64_t max_bytes_ = uint64_t{10} << 20;
  bool running_ = false;
};

struct FlightRecorderStats {
  uint64_t dropped;         // events lost (no chunk to take, or a signal inside a write)
  uint64_t chunks;          // chunks in the pool
  uint64_t chunk_bytes;     // bytes of each
  uint64_t recycled;        // chunks taken back from the oldest data because the pool was full
  uint64_t aged;            // chunks freed because all their events were older than MinAge
  uint64_t metadata_bytes;  // memory beside the chunks (headers, queues, snapshot scratch)
};
FlightRecorderStats GetFlightRecorderStats();

// User annotations, as in runtime/trace.
namespace trace {

inline bool IsEnabled() { return libdump_trace_enabled() != 0; }

// A logical operation, possibly spanning threads (trace.NewTask). Regions
// and logs name it by id(). End() or the destructor ends it.
class Task {
 public:
  explicit Task(const char* name, uint64_t parent = 0) : name_(name) {
    if (__builtin_expect(IsEnabled(), 0)) id_ = libdump_task_begin_slow(name, parent, &begin_);
  }
  ~Task() { End(); }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  void End() {
    if (id_ != 0) libdump_task_end_slow(name_, id_, begin_);
    id_ = 0;
  }
  uint64_t id() const { return id_; }

 private:
  const char* name_;
  uint64_t id_ = 0;
  int64_t begin_ = 0;
};

// A region name interned at its call site's first recorded region, for the
// cheapest regions: a static per call site,
//   static constinit libdump::trace::Name kParse("parse");
//   libdump::trace::Region r(kParse);
// records an id, not the string (docs/FLIGHT_RECORDER.md, "Cost").
class Name {
 public:
  explicit constexpr Name(const char* name) : name_(name) {}
  const char* str() const { return name_; }
  // The interned id; 0 if the table is full (the region then copies str()).
  uint32_t id() const {
    uint32_t id = __atomic_load_n(&id_, __ATOMIC_RELAXED);
    if (__builtin_expect(id == 0, 0)) id = Intern();
    return id == kNotInterned ? 0 : id;
  }

 private:
  static constexpr uint32_t kNotInterned = ~0u;  // the table was full: not asked again
  uint32_t Intern() const {
    uint32_t id = libdump_trace_intern(name_);
    if (id == 0) id = kNotInterned;
    __atomic_store_n(&id_, id, __ATOMIC_RELAXED);
    return id;
  }
  const char* name_;
  mutable uint32_t id_ = 0;
};

// A timed section of one thread (trace.WithRegion), nestable. name must
// outlive the region (a literal, typically).
class Region {
 public:
  explicit Region(const char* name, uint64_t task = 0) : name_(name), task_(task) {
    if (__builtin_expect(IsEnabled(), 0)) begin_ = libdump_region_begin_slow(name, task);
  }
  Region(const char* name, const Task& task) : Region(name, task.id()) {}
  explicit Region(const Name& name, uint64_t task = 0) : name_(name.str()), task_(task) {
    if (__builtin_expect(IsEnabled(), 0)) {
      id_ = name.id();
      begin_ = id_ != 0 ? libdump_region_begin_id_slow(id_, task) : libdump_region_begin_slow(name_, task);
    }
  }
  Region(const Name& name, const Task& task) : Region(name, task.id()) {}
  ~Region() {
    if (begin_ != 0) {
      if (id_ != 0) libdump_region_end_id_slow(id_, begin_, task_);
      else libdump_region_end_slow(name_, begin_, task_);
    }
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  const char* name_;
  uint64_t task_;
  int64_t begin_ = 0;
  uint32_t id_ = 0;
};

// A message with a category (trace.Log).
inline void Log(const char* category, const char* message, uint64_t task = 0) {
  if (__builtin_expect(IsEnabled(), 0)) libdump_trace_log_slow(category, message, task);
}

}  // namespace trace
}  // namespace libdump
#endif  // __cplusplus
