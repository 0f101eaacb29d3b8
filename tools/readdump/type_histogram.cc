#include "type_histogram.h"

#include <algorithm>
#include <cstdio>

#include "escape.h"
#include "record_fields.h"
#include "own_line.h"

namespace libdump::readdump {

void Histogram::Add(const format::Record& r) {
  if (r.kind == format::Kind::kObject) {
    const bool own = r.object.type != 0 && own_types_.contains(r.object.type);
    if (own) {
      own_.count++;
      own_.bytes += r.object.size;
      if (!include_own_) return;
    }
    Cell& c = cells_[r.object.type];
    c.count++;
    c.bytes += r.object.size;
  } else if (r.kind == format::Kind::kTypeInfo) {
    if ((r.type_info.flags & format::kTypeOwn) && cells_.empty() && own_.count == 0) {
      own_types_.insert(r.type_info.type);
    }
  } else if (r.kind == format::Kind::kType) {
    names_.try_emplace(r.type.addr, r.type.name);  // the first definition wins
  }
}

namespace {

void SortRows(std::vector<Histogram::Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const Histogram::Row& a, const Histogram::Row& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.count != b.count) return a.count > b.count;
    if (a.name != b.name) return a.name < b.name;
    return a.type < b.type;
  });
}

}  // namespace

void Histogram::SetClasses(std::vector<Row> rows) {
  SortRows(rows);
  classes_ = std::move(rows);
  typed_ = true;
}

std::vector<Histogram::Row> Histogram::Rows() const {
  if (typed_) return classes_;
  std::vector<Row> rows;
  rows.reserve(cells_.size());
  for (const auto& [type, cell] : cells_) {
    Row row{type, "", "", cell.count, cell.bytes};
    if (type == 0) {
      row.name = "(untyped)";
    } else if (auto it = names_.find(type); it != names_.end()) {
      row.name = it->second;
    } else {
      row.name = "(undefined)";
    }
    rows.push_back(std::move(row));
  }
  SortRows(rows);
  return rows;
}

namespace {

struct Totals {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

Totals Sum(const std::vector<Histogram::Row>& rows) {
  Totals t;
  for (const auto& r : rows) {
    t.count += r.count;
    t.bytes += r.bytes;
  }
  return t;
}

}  // namespace

void PrintHistogram(std::ostream& out, const Histogram& h, uint64_t top) {
  const std::vector<Histogram::Row> rows = h.Rows();
  const size_t shown = top == 0 ? rows.size() : std::min<size_t>(rows.size(), top);
  char line[80];
  // Typed, the rule column says what named each class (docs/TYPING.md).
  if (h.typed()) {
    std::snprintf(line, sizeof line, "%10s %12s  %-18s %-7s %s\n", "count", "bytes", "type id", "rule", "class");
  } else {
    std::snprintf(line, sizeof line, "%10s %12s  %-18s %s\n", "count", "bytes", "type id", "type");
  }
  out << line;
  for (size_t i = 0; i < shown; ++i) {
    const Histogram::Row& r = rows[i];
    std::snprintf(line, sizeof line, "%10llu %12llu  %-18s ", static_cast<unsigned long long>(r.count),
                  static_cast<unsigned long long>(r.bytes), HexString(r.type).c_str());
    out << line;
    if (h.typed()) {
      std::snprintf(line, sizeof line, "%-7s ", r.rule.c_str());
      out << line;
    }
    out << EscapeText(r.name) << '\n';
  }
  if (shown < rows.size()) out << "... " << rows.size() - shown << (h.typed() ? " more classes\n" : " more types\n");
  const Totals t = Sum(rows);
  std::snprintf(line, sizeof line, "%10llu %12llu  ", static_cast<unsigned long long>(t.count),
                static_cast<unsigned long long>(t.bytes));
  out << line << "total, " << rows.size() << (h.typed() ? " classes\n" : " types\n");
  if (const std::string own = tools::OwnLine(h.own_count(), h.own_bytes(), h.include_own()); !own.empty()) {
    out << own << '\n';
  }
}

void WriteHistogramJson(JsonWriter& json, const Histogram& h, uint64_t top) {
  const std::vector<Histogram::Row> rows = h.Rows();
  const size_t shown = top == 0 ? rows.size() : std::min<size_t>(rows.size(), top);
  const Totals t = Sum(rows);
  json.BeginObject();
  json.Field("types", rows.size());
  json.Key("typed");
  json.Bool(h.typed());
  json.Field("count", t.count);
  json.Field("bytes", t.bytes);
  if (h.own_count() != 0) {  // libdump's own memory, left out of the rows unless included
    json.Field("own_count", h.own_count());
    json.Field("own_bytes", h.own_bytes());
    json.Field("own_included", uint64_t{h.include_own()});
  }
  json.Key("rows");
  json.BeginArray();
  for (size_t i = 0; i < shown; ++i) {
    json.BeginObject();
    json.Key("type");
    json.Hex(rows[i].type);
    json.Field("name", rows[i].name);
    if (h.typed()) json.Field("rule", rows[i].rule);
    json.Field("count", rows[i].count);
    json.Field("bytes", rows[i].bytes);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

}  // namespace libdump::readdump
