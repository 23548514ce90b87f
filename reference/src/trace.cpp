// ki::reference::trace (ki/reference/trace.hpp): the recorder on the trace hook.
//
// Recording keeps, per traced group, the events as the hook delivers them (strings copied: the
// event's pointers live only during the call), in the records of trace_data.hpp; the page and the
// pictures are drawn from them by trace_page.cpp.
#include <ki/reference/trace.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <ki/errors.hpp>
#include <ki/reference/events.hpp>

#include "trace_data.hpp"

namespace ki::reference {
namespace {
using detail::tracing::ev;
using detail::tracing::group_rec;
using detail::tracing::group_svg;
using detail::tracing::i64;
using detail::tracing::launch_rec;
using detail::tracing::max_races;
using detail::tracing::page_html;

std::string base_name(std::string_view f) {
  const auto p = f.find_last_of('/');
  return std::string(p == std::string_view::npos ? f : f.substr(p + 1));
}
std::string loc(const source_location& w) {
  if (w.file == nullptr || *w.file == '\0' || w.line == 0) return "";
  return base_name(w.file) + ":" + std::to_string(w.line);
}
/// "file:line[:column]" as errors give it -> "file:line", without the directories.
std::string loc(const std::string& where) {
  std::string s = base_name(where);
  const auto a = s.find(':');
  if (a == std::string::npos) return s;
  const auto b = s.find(':', a + 1);
  return b == std::string::npos ? s : s.substr(0, b);
}

}  // namespace

struct trace::impl {
  trace_options opt;
  mutable std::mutex m;
  std::vector<launch_rec> launches;
  std::set<std::uint64_t> skipped;
  bool installed = false;

  static void hook(void* ctx, const trace_event& e) noexcept {
    try {
      static_cast<impl*>(ctx)->record(e);
    } catch (...) {  // (the hook must not throw; a trace that cannot grow just stops growing)
    }
  }

  launch_rec* launch_of(const trace_launch& l) {
    for (auto it = launches.rbegin(); it != launches.rend(); ++it)
      if (it->serial == l.serial) return &*it;
    if (skipped.count(l.serial) != 0) return nullptr;
    if (launches.size() >= opt.max_launches) {
      skipped.insert(l.serial);
      return nullptr;
    }
    launch_rec& r = launches.emplace_back();
    r.serial = l.serial;
    r.kernel = l.kernel != nullptr ? l.kernel : "";
    r.profile = l.profile != nullptr ? l.profile : "";
    r.order = l.order != nullptr ? l.order : "";
    r.numgroups = l.numgroups;
    r.groupsize = l.groupsize;
    r.width = l.sub_group_width;
    r.num_sub_groups = l.num_sub_groups;
    const auto n = static_cast<std::size_t>(l.groupsize.x * l.groupsize.y * l.groupsize.z);
    if (l.sub_group != nullptr) r.sub_group.assign(l.sub_group, l.sub_group + n);
    if (l.lane != nullptr) r.lane.assign(l.lane, l.lane + n);
    r.linear = l.linear_layout;
    r.ka = l.ka;
    r.extents = l.extents;
    r.seed = l.seed;
    return &r;
  }

  void record(const trace_event& e) {
    if (e.launch == nullptr) return;
    std::lock_guard lock(m);
    if (e.kind == trace_kind::group_start &&
        std::find(opt.groups.begin(), opt.groups.end(), e.group) == opt.groups.end())
      return;
    launch_rec* L = launch_of(*e.launch);
    if (L == nullptr) return;
    group_rec* G = nullptr;
    if (e.kind == trace_kind::group_start) {
      G = &L->groups.emplace_back();
      G->id = e.group;
    } else {
      for (auto it = L->groups.rbegin(); it != L->groups.rend(); ++it)
        if (it->id == e.group && !it->ended) {
          G = &*it;
          break;
        }
    }
    if (G == nullptr) return;
    const bool essential = e.kind == trace_kind::failure || e.kind == trace_kind::group_end;
    if (G->events.size() >= opt.max_events && !essential) {
      G->cut = true;
      return;
    }
    if (e.kind == trace_kind::access && !opt.accesses) return;
    if (e.kind == trace_kind::race && ++G->races > max_races) return;
    ev r{e.kind,
         e.item,
         e.what != nullptr ? e.what : "",
         e.kind == trace_kind::failure && e.error != nullptr ? loc(e.error->where()) : loc(e.where),
         e.width,
         e.round,
         e.index,
         e.other_item,
         loc(e.other_where),
         e.message != nullptr ? e.message : ""};
    G->events.push_back(std::move(r));
    if (e.kind == trace_kind::group_end) {
      G->ended = true;
      if (!opt.path.empty()) write_locked(opt.path);
      if (!opt.svg_dir.empty()) write_svg_locked(*L, *G);
    }
  }

  void write_svg_locked(const launch_rec& L, const group_rec& G) const {
    std::string name;
    for (const char c : L.kernel)
      name += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.') ? c : '_';
    if (name.empty()) name = "kernel";
    std::size_t before = 0;  // launches of the same name recorded before this one
    for (const auto& l : launches) {
      if (&l == &L) break;
      before += l.kernel == L.kernel;
    }
    if (before > 0) name += "-" + std::to_string(before);
    if (G.id != xyz<i64>{0, 0, 0})
      name += "-" + std::to_string(G.id.x) + "-" + std::to_string(G.id.y) + "-" + std::to_string(G.id.z);
    const std::string path = opt.svg_dir + "/" + name + ".svg";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << group_svg(L, G, opt.accesses, true);
    if (!f) throw std::runtime_error("ki::reference::trace: cannot write '" + path + "'");
  }

  std::string html_locked() const { return page_html(opt, launches, skipped.size()); }

  void write_locked(const std::string& path) const {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("ki::reference::trace: cannot write '" + path + "'");
    f << html_locked();
    if (!f) throw std::runtime_error("ki::reference::trace: cannot write '" + path + "'");
  }
};

trace::trace(trace_options options) : impl_(std::make_shared<impl>()) {
  impl_->opt = std::move(options);
  if (impl_->opt.groups.empty()) throw std::invalid_argument("ki::reference::trace: trace_options::groups is empty");
  void* const old_ctx = trace_hook_context();
  const trace_hook old = set_trace_hook(&impl::hook, impl_.get());
  if (old != nullptr) {
    set_trace_hook(old, old_ctx);  // (put back what was there)
    throw std::logic_error("ki::reference::trace: another trace hook is installed (one trace at a time)");
  }
  impl_->installed = true;
}

trace::~trace() { stop(); }

void trace::stop() {
  if (!impl_->installed) return;
  // Only our own hook is removed (the context tells ours from another's).
  if (trace_hook_context() == impl_.get()) set_trace_hook(nullptr);
  impl_->installed = false;
}

std::size_t trace::launches() const {
  std::lock_guard lock(impl_->m);
  return impl_->launches.size();
}
std::size_t trace::launches_skipped() const {
  std::lock_guard lock(impl_->m);
  return impl_->skipped.size();
}
std::string trace::html() const {
  std::lock_guard lock(impl_->m);
  return impl_->html_locked();
}
std::string trace::svg(std::size_t launch, std::size_t group) const {
  std::lock_guard lock(impl_->m);
  const auto& L = impl_->launches.at(launch);
  return group_svg(L, L.groups.at(group), impl_->opt.accesses, true);
}
void trace::write(const std::string& path) const {
  std::lock_guard lock(impl_->m);
  impl_->write_locked(path);
}

}  // namespace ki::reference

namespace ki::reference::detail {
namespace {
std::int64_t parse_int(const std::string& s, const char* var) {
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 0)
    throw std::invalid_argument(std::string("ki::reference: ") + var + ": '" + s + "' is not a number >= 0");
  return v;
}
}  // namespace

trace_options trace_options_from_env(const char* path) {
  trace_options o;
  o.path = path;
  o.title = "ki-trace";
  if (const char* t = std::getenv("KI_REFERENCE_TRACE_TITLE"); t != nullptr && *t != '\0') o.title = t;
  if (const char* g = std::getenv("KI_REFERENCE_TRACE_GROUPS"); g != nullptr && *g != '\0') {
    o.groups.clear();
    std::stringstream all(g);
    std::string one;
    while (std::getline(all, one, ';')) {
      std::int64_t c[3] = {0, 0, 0};
      std::stringstream parts(one);
      std::string p;
      int k = 0;
      while (std::getline(parts, p, ',')) {
        if (k == 3)
          throw std::invalid_argument("ki::reference: KI_REFERENCE_TRACE_GROUPS: '" + one +
                                      "' has more than 3 coordinates");
        c[k++] = parse_int(p, "KI_REFERENCE_TRACE_GROUPS");
      }
      if (k == 0)
        throw std::invalid_argument("ki::reference: KI_REFERENCE_TRACE_GROUPS: '" + std::string(g) +
                                    "' names an empty group");
      o.groups.push_back({c[0], c[1], c[2]});
    }
  }
  if (const char* n = std::getenv("KI_REFERENCE_TRACE_LAUNCHES"); n != nullptr && *n != '\0')
    o.max_launches = static_cast<std::size_t>(parse_int(n, "KI_REFERENCE_TRACE_LAUNCHES"));
  if (const char* a = std::getenv("KI_REFERENCE_TRACE_ACCESSES"); a != nullptr && std::string(a) == "0")
    o.accesses = false;
  if (const char* d = std::getenv("KI_REFERENCE_TRACE_SVG_DIR"); d != nullptr) o.svg_dir = d;
  return o;
}

void start_env_trace() {
  // Once per process, on the first launch (the launching thread: a bad value is its error).
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("KI_REFERENCE_TRACE");
    if (path == nullptr || *path == '\0') return;
    static trace* t = nullptr;  // lives until the process ends (the page is rewritten as groups end)
    t = new trace(trace_options_from_env(path));
    t->write(path);  // (a page even if no traced group ever ends)
  });
}
}  // namespace ki::reference::detail
