// The CPU runtime: checked-access mode's shared pieces (ki/cpu/checked_support.hpp).
#include <ki/cpu/checked_support.hpp>

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

namespace ki::detail::cpu {

namespace {
struct allocations {
  std::mutex m;
  std::map<const unsigned char*, std::size_t> live;
  std::atomic<std::uint64_t> version{0};
};
allocations& registry() {
  static allocations* r = new allocations;  // (never destroyed: frees may come during exit)
  return *r;
}
}  // namespace

void checked_allocation_added(const void* p, std::size_t bytes) {
  auto& r = registry();
  std::lock_guard lock(r.m);
  r.live[static_cast<const unsigned char*>(p)] = bytes;
  r.version.fetch_add(1, std::memory_order_release);
}

void checked_allocation_removed(const void* p) {
  auto& r = registry();
  std::lock_guard lock(r.m);
  if (r.live.erase(static_cast<const unsigned char*>(p)) != 0) r.version.fetch_add(1, std::memory_order_release);
}

void allocation_view::refresh() {
  auto& r = registry();
  if (r.version.load(std::memory_order_acquire) == version_) return;
  std::lock_guard lock(r.m);
  version_ = r.version.load(std::memory_order_relaxed);
  ranges_.clear();
  for (const auto& [p, n] : r.live) ranges_.push_back({p, n});
  lo_ = ranges_.empty() ? nullptr : ranges_.front().begin;
  hi_ = nullptr;
  for (const auto& x : ranges_) hi_ = std::max(hi_, x.begin + x.bytes, std::less<>());
}

const allocation_view::range* allocation_view::search(const unsigned char* b) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), b,
                             [](const unsigned char* x, const range& r) { return std::less<>()(x, r.begin); });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return b < it->begin + it->bytes ? &*it : nullptr;
}

void array_names::add(const checked::array_info& a, std::int64_t index, const source_location& where) {
  const auto* d = static_cast<const unsigned char*>(a.data);
  const auto* e = d + index * static_cast<std::int64_t>(a.element_size);
  recent_[next_] = {a, index, where, e, e + a.element_size};
  next_ = (next_ + 1) % ring;
  ++live_;
  // The group's arrays: few (a kernel's arguments and local arrays); the newest last.
  if (!arrays_.empty() && arrays_.back().a.data == a.data && arrays_.back().a.count == a.count) return;
  for (std::size_t k = arrays_.size(); k-- > 0;)
    if (arrays_[k].a.data == a.data && arrays_[k].a.count == a.count && arrays_[k].a.element_size == a.element_size) {
      std::rotate(arrays_.begin() + static_cast<std::ptrdiff_t>(k),
                  arrays_.begin() + static_cast<std::ptrdiff_t>(k) + 1, arrays_.end());
      return;
    }
  if (arrays_.size() == 64) arrays_.erase(arrays_.begin());  // (many views: forget the oldest)
  arrays_.push_back({a, d, d + a.count * static_cast<std::int64_t>(a.element_size)});
}

const array_names::subscript* array_names::recent(const void* p) const {
  if (live_ == 0) return nullptr;
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t k = 0; k < ring; ++k) {
    const subscript& s = recent_[(next_ + ring - 1 - k) % ring];
    if (b >= s.begin && b < s.end) return &s;
  }
  return nullptr;
}

std::optional<array_names::subscript> array_names::take(const void* p) {
  const subscript* s = recent(p);
  if (s == nullptr) return std::nullopt;
  subscript r = *s;
  auto* m = const_cast<subscript*>(s);
  m->begin = m->end = nullptr;
  return r;
}

void array_names::forget(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (auto& s : recent_)
    if (b >= s.begin && b < s.end) s.begin = s.end = nullptr;
}

namespace {
/// The module holding pc and pc's address as addr2line wants it (relative to the module's load
/// address: position-independent executables and shared libraries; 0 for a fixed executable).
struct module_address {
  std::string file;
  std::uintptr_t address = 0;
};
module_address locate(const void* pc) {
  module_address r;
  Dl_info info{};
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return r;
  struct search {
    std::uintptr_t pc, bias;
    bool found;
  } s{reinterpret_cast<std::uintptr_t>(pc), 0, false};
  dl_iterate_phdr(
      [](dl_phdr_info* i, std::size_t, void* ctx) {
        auto* s = static_cast<search*>(ctx);
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const auto& ph = i->dlpi_phdr[k];
          if (ph.p_type != PT_LOAD) continue;
          const std::uintptr_t b = i->dlpi_addr + ph.p_vaddr;
          if (s->pc >= b && s->pc < b + ph.p_memsz) {
            s->bias = i->dlpi_addr;
            s->found = true;
            return 1;
          }
        }
        return 0;
      },
      &s);
  if (!s.found) return r;
  // The executable's own name: /proc/self/exe (dladdr names it as argv[0] says).
  r.file = info.dli_fname;
  if (r.file.empty() || r.file.find('/') == std::string::npos) {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) r.file.assign(buf, static_cast<std::size_t>(n));
  }
  r.address = s.pc - s.bias - 1;  // (the call before the return address)
  return r;
}

bool in_library_headers(const std::string& file) {
  return file.find("/include/ki/") != std::string::npos || file.rfind("/usr/", 0) == 0;
}

/// Runs addr2line on one address: the inlining chain, innermost first, as file and line.
std::vector<std::pair<std::string, unsigned>> frames(const module_address& m) {
  std::vector<std::pair<std::string, unsigned>> r;
  std::string q;  // the file name, quoted for the shell
  for (const char c : m.file) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(m.address));
  const std::string cmd = "addr2line -i -e '" + q + "' " + addr + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (const auto d = s.find(" (discriminator"); d != std::string::npos) s.resize(d);
    const auto colon = s.rfind(':');
    if (colon == std::string::npos) continue;
    const unsigned n = static_cast<unsigned>(std::strtoul(s.c_str() + colon + 1, nullptr, 10));
    r.emplace_back(s.substr(0, colon), n);
  }
  pclose(f);
  return r;
}
}  // namespace

namespace {
/// One frame of pc's inlining chain: its location (file kept forever), and whether it is the
/// user's code (not ki's headers, not the compiler's or the system's).
struct chain_frame {
  source_location at;
  bool user;
};
/// pc's inlining chain, innermost first (cached per pc; the lock held by the caller).
const std::vector<chain_frame>& chain_of(const void* pc) {
  static std::unordered_map<const void*, std::vector<chain_frame>> cache;
  static std::set<std::string> names;  // the file names the locations point into (kept forever)
  if (auto it = cache.find(pc); it != cache.end()) return it->second;
  std::vector<chain_frame> chain;
  const module_address mod = locate(pc);
  if (!mod.file.empty())
    for (const auto& [file, line] : frames(mod))
      if (line != 0 && file != "??")
        chain.push_back({{names.insert(file).first->c_str(), line, 0}, !in_library_headers(file)});
  return cache.emplace(pc, std::move(chain)).first->second;
}
std::mutex chain_m;
}  // namespace

source_location code_location(const void* pc) {
  std::lock_guard lock(chain_m);
  for (const chain_frame& f : chain_of(pc))
    if (f.user) return f.at;
  return {};
}

helper_use helper_caller(const void* pc, const source_location& at, const void* caller) {
  if (pc == nullptr || at.line == 0) return {};
  std::lock_guard lock(chain_m);
  const auto& chain = chain_of(pc);
  const auto same = [](const source_location& a, const source_location& b) {
    return a.line == b.line && std::strcmp(base_name(a.file), base_name(b.file)) == 0;
  };
  // The access's own line in the chain: the helper ran there, inlined into the function that
  // called it, the next frame (where the user's code called it directly: a frame of ki's
  // between them means ki called the user's code, e.g. a KA phase, not a helper).
  for (std::size_t k = 0; k < chain.size(); ++k)
    if (chain[k].user && same(chain[k].at, at)) {
      if (k + 1 < chain.size()) {
        if (chain[k + 1].user && !same(chain[k + 1].at, at)) return {chain[k + 1].at, true};
        return {};
      }
      // The function of the access is not inlined anywhere: its caller is the line of the
      // return address the shadow call stack kept (a call from ki's code names no user line).
      if (caller == nullptr) return {};
      for (const chain_frame& f : chain_of(caller)) {
        if (!f.user) return {};
        if (!same(f.at, at)) return {f.at, true};
      }
      return {};
    }
  // Not in the chain: the subscript made a reference (a helper returning T&) that the
  // instruction at pc used, at the innermost user frame's line.
  for (const chain_frame& f : chain)
    if (f.user) return same(f.at, at) ? helper_use{} : helper_use{f.at, false};
  return {};
}

std::string helper_note(const void* pc, const source_location& at, const void* caller) {
  const helper_use u = helper_caller(pc, at, caller);
  if (u.at.line == 0) return {};
  return std::string(u.called ? " (in a function called at " : " (used at ") + base_name(u.at.file) + ":" +
         std::to_string(u.at.line) + ")";
}

void intended_races::declare(const void* p, std::size_t bytes, const source_location& where) {
  std::lock_guard lock(m_);
  if (p == nullptr) {
    for (const auto& s : sites_)
      if (s.line == where.line && std::strcmp(base_name(s.file), base_name(where.file)) == 0) return;
    sites_.push_back(where);
  } else {
    const auto* b = static_cast<const unsigned char*>(p);
    for (const auto& r : ranges_)
      if (r.begin == b && r.end == b + bytes) return;
    ranges_.push_back({b, b + bytes, where});
  }
  empty_.store(false, std::memory_order_relaxed);
}

const source_location* intended_races::match(const void* p, const source_location& a, const source_location& b) const {
  if (empty()) return nullptr;
  std::lock_guard lock(m_);
  const auto* e = static_cast<const unsigned char*>(p);
  for (const auto& r : ranges_)
    if (e >= r.begin && e < r.end) return &r.where;
  const auto same = [](const source_location& x, const source_location& y) {
    return x.line != 0 && x.line == y.line && std::strcmp(base_name(x.file), base_name(y.file)) == 0;
  };
  for (const auto& s : sites_)
    if (same(s, a) || same(s, b)) return &s;
  return nullptr;
}

void race_tally::add(std::int64_t group, const std::string& kind, const source_location& a, const source_location& b,
                     const std::string& text) {
  std::string key = kind;
  key.append("|").append(a.file != nullptr ? base_name(a.file) : "").append(":").append(std::to_string(a.line));
  key.append("|").append(b.file != nullptr ? base_name(b.file) : "").append(":").append(std::to_string(b.line));
  std::lock_guard lock(m_);
  ++total_;
  if (group >= 0) groups_.insert(group);
  else between_ = true;
  if (auto it = index_.find(key); it != index_.end()) {
    ++sites_[it->second].count;
    return;
  }
  if (sites_.size() == max_sites) {
    ++unlisted_;
    return;
  }
  index_.emplace(std::move(key), sites_.size());
  sites_.push_back({text, 1});
}

void race_tally::add_error(std::int64_t group, const kernel_error& e) {
  std::lock_guard lock(m_);
  if (!first_ || group < first_->first) first_.emplace(group, e);
}

bool race_tally::empty() const {
  std::lock_guard lock(m_);
  return total_ == 0 && !first_;
}

std::int64_t race_tally::total() const {
  std::lock_guard lock(m_);
  return total_;
}

std::string race_tally::summary() const {
  std::lock_guard lock(m_);
  if (total_ == 0) return {};
  std::string s = "; all the launch's races (KI_REFERENCE_RACES=all): " + std::to_string(total_) + " in " +
                  std::to_string(groups_.size()) + (groups_.size() == 1 ? " work-group" : " work-groups") +
                  (between_ ? " and between work-groups" : "") + ", at " +
                  std::to_string(sites_.size() + (unlisted_ > 0 ? 1 : 0)) +
                  (unlisted_ > 0        ? " or more pairs of lines:"
                   : sites_.size() == 1 ? " pair of lines:"
                                        : " pairs of lines:");
  for (const auto& site : sites_) s += "\n  " + std::to_string(site.count) + " x " + site.text;
  if (unlisted_ > 0)
    s += "\n  and " + std::to_string(unlisted_) + " more at other pairs of lines (the first " +
         std::to_string(max_sites) + " are listed)";
  return s;
}

std::vector<std::string> race_tally::instances() const {
  std::lock_guard lock(m_);
  std::vector<std::string> r;
  for (const auto& site : sites_) r.push_back(std::to_string(site.count) + " x " + site.text);
  return r;
}

std::optional<kernel_error> race_tally::error() const {
  std::optional<std::pair<std::int64_t, kernel_error>> first;
  {
    std::lock_guard lock(m_);
    first = first_;
  }
  if (!first) return std::nullopt;
  return with_more(first->second, summary());
}

kernel_error with_more(const kernel_error& e, const std::string& more) {
  return kernel_error(e.error_kind(), e.group(), e.local(), e.where(), std::string(e.what()) + more);
}

}  // namespace ki::detail::cpu
