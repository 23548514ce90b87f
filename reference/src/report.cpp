// Launch reports: formatting, the process-wide log, the KI_REFERENCE_REPORT file.
#include <ki/reference/report.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>

#include "report_log.hpp"

namespace ki::reference {
namespace {

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += c;
        }
    }
  }
  return r + "\"";
}

template <class F>
std::string json_list(const std::vector<std::string>& v, F f) {
  std::string r = "[";
  for (std::size_t i = 0; i < v.size(); ++i) r += (i ? "," : "") + f(v[i]);
  return r + "]";
}

struct report_store {
  std::mutex m;
  std::deque<report> recent;
};
report_store& store() {
  static report_store s;
  return s;
}

}  // namespace

const char* to_string(kernel_error::kind k) {
  using K = kernel_error::kind;
  switch (k) {
    case K::exception: return "exception";
    case K::stack_overflow: return "stack-overflow";
    case K::barrier_mismatch: return "barrier-mismatch";
    case K::cannot_finish: return "cannot-finish";
    case K::resource: return "resource";
    case K::invalid_collective: return "invalid-collective";
    case K::collective_mismatch: return "collective-mismatch";
    case K::data_race: return "data-race";
    case K::invalid_seed: return "invalid-seed";
    case K::unsupported: return "unsupported";
    case K::no_progress: return "no-progress";
  }
  return "unknown";
}

const char* to_string(order o) {
  switch (o) {
    case order::forward: return "forward";
    case order::reverse: return "reverse";
    case order::random: return "random";
  }
  return "unknown";
}

bool report::has_errors() const {
  for (const auto& d : diagnostics)
    if (d.severity == severity::error) return true;
  return false;
}

std::string report::str() const {
  std::ostringstream os;
  os << "ki::reference report: kernel '" << kernel << "', profile '" << profile << "', schedule "
     << to_string(schedule.items) << " (seed " << schedule.seed << ")";
  if (diagnostics.empty()) os << ": nothing found\n";
  else os << ":\n";
  for (const auto& d : diagnostics) {
    os << "  " << (d.severity == severity::error ? "error" : "warning") << " " << d.kind;
    for (std::size_t i = 0; i < d.where.size(); ++i) os << (i ? ", " : " at ") << d.where[i];
    os << " (" << d.count << (d.count == 1 ? " instance" : " instances") << ")\n";
    // The first three here; all kept ones (up to 8) are in `instances` and the JSON.
    const std::size_t shown = std::min<std::size_t>(d.instances.size(), 3);
    for (std::size_t i = 0; i < shown; ++i) os << "    " << d.instances[i] << "\n";
    // (A warning's one instance already says how many times it happened.)
    if (d.severity == severity::error && static_cast<std::int64_t>(shown) < d.count)
      os << "    ... " << d.count - static_cast<std::int64_t>(shown) << " more\n";
  }
  return os.str();
}

std::string report::json() const {
  std::ostringstream os;
  os << "{\"kernel\":" << json_string(kernel) << ",\"profile\":" << json_string(profile)
     << ",\"seed\":" << schedule.seed << ",\"order\":\"" << to_string(schedule.items) << "\",\"diagnostics\":[";
  for (std::size_t i = 0; i < diagnostics.size(); ++i) {
    const auto& d = diagnostics[i];
    os << (i ? "," : "") << "{\"kind\":" << json_string(d.kind) << ",\"severity\":\""
       << (d.severity == severity::error ? "error" : "warning") << "\",\"where\":" << json_list(d.where, json_string)
       << ",\"count\":" << d.count << ",\"instances\":" << json_list(d.instances, json_string)
       << ",\"message\":" << json_string(d.message) << "}";
  }
  os << "]}";
  return os.str();
}

const report* report_of(const kernel_error& e) {
  // Only the reference backend sets details on the errors it throws, always to a report.
  if (!e.details() || !detail::is_report(e.details().get())) return nullptr;
  return static_cast<const report*>(e.details().get());
}

std::vector<report> take_reports() {
  auto& s = store();
  std::lock_guard lock(s.m);
  std::vector<report> r(std::make_move_iterator(s.recent.begin()), std::make_move_iterator(s.recent.end()));
  s.recent.clear();
  return r;
}

namespace detail {

namespace {
std::mutex registry_m;
std::vector<const void*>& registry() {  // reports handed out as error details (alive ones)
  static std::vector<const void*> r;
  return r;
}
}  // namespace

std::shared_ptr<const report> publish(report r) {
  {
    static const char* path = std::getenv("KI_REFERENCE_REPORT");
    static std::mutex file_m;
    if (path != nullptr && *path != '\0') {
      std::lock_guard lock(file_m);
      if (std::FILE* f = std::fopen(path, "a")) {
        std::fprintf(f, "%s\n", r.json().c_str());
        std::fclose(f);
      }
    }
  }
  {
    auto& s = store();
    std::lock_guard lock(s.m);
    s.recent.push_back(r);
    if (s.recent.size() > 64) s.recent.pop_front();
  }
  auto* p = new report(std::move(r));
  {
    std::lock_guard lock(registry_m);
    registry().push_back(p);
  }
  return std::shared_ptr<const report>(p, [](const report* q) {
    {
      std::lock_guard lock(registry_m);
      auto& v = registry();
      for (auto& x : v)
        if (x == q) {
          x = v.back();
          v.pop_back();
          break;
        }
    }
    delete q;
  });
}

bool is_report(const void* p) {
  std::lock_guard lock(registry_m);
  for (const void* x : registry())
    if (x == p) return true;
  return false;
}

}  // namespace detail
}  // namespace ki::reference
