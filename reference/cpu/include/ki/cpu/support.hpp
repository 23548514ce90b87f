// The CPU runtime (ki::cpu_runtime): helpers both CPU backends' executors share.
//
// The runtime's headers are on the include path of its clients only (ki::reference,
// ki::simd_cpu, tools/bench); they are not installed (installed consumers link the static
// libraries only). Everything here is stateless; per-backend state (the TBB arenas, the values
// read from the environment) stays in each backend's own translation unit.
#pragma once
#include <tbb/task_arena.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <stdexcept>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

#include <ki/cpu/checked_support.hpp>  // helper_note
#include <ki/cpu/fiber.hpp>

namespace ki::detail::cpu {

inline std::string to_string(const xyz<std::int64_t>& v) {
  return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
}

inline std::string to_string(const source_location& s) {
  if (s.line == 0) return "<unknown>";
  const char* f = std::strrchr(s.file, '/');
  std::string r = std::string(f ? f + 1 : s.file) + ":" + std::to_string(s.line);
  return s.column != 0 ? r + ":" + std::to_string(s.column) : r;
}

/// Counts a race the kernel declared intended (ki::intended_race at `declared`; `text`: one
/// instance) as the warning `intended-race` in `sites` (either layer's map from "file:line kind"
/// to an entry of kind, where, message and count).
template <class Sites>
void count_intended(Sites& sites, const source_location& declared, const std::string& text) {
  auto& e = sites[to_string(declared) + " intended-race"];
  if (e.count == 0)
    e = {"intended-race", to_string(declared),
         "a race the kernel declares intended (ki::intended_race at " + to_string(declared) + "), e.g. " + text, 0};
  ++e.count;
}

/// The same source location, also when two copies of a file name spell it (the barriers' fast
/// path compares with same_site, ki/detail/cpu/executor.hpp, and falls back on this).
inline bool same_point(const source_location& a, const source_location& b) {
  return a.line == b.line && a.column == b.column && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

/// Malformed KI_* values. A backend reads its variables once, wherever it first needs them (a
/// default member initialiser of its backend value, which may run before main; a worker
/// thread); a malformed one is recorded here and the fallback used, and every launch first
/// calls throw_if_bad_environment on the host, which throws std::invalid_argument naming the
/// variable, its value and what it takes. (Never thrown where it is read: a backend value built
/// before main must not end the program.)
struct env_error {
  std::string prefix, message;
};
inline std::mutex& env_errors_mutex() {
  static std::mutex m;
  return m;
}
inline std::vector<env_error>& env_errors() {
  static std::vector<env_error> v;
  return v;
}
/// Records that `name` holds `value`, which is not `expected` ("a positive integer").
inline void bad_environment(const char* prefix, const char* name, const char* value, const char* expected) {
  const std::string m = std::string(prefix) + ": environment variable " + name + "='" + value + "' is not " + expected;
  std::lock_guard lock(env_errors_mutex());
  auto& v = env_errors();
  if (std::none_of(v.begin(), v.end(), [&](const env_error& e) { return e.message == m; })) v.push_back({prefix, m});
}
/// Throws std::invalid_argument for the malformed values a backend (`prefix`) has read.
inline void throw_if_bad_environment(const char* prefix) {
  std::string all;
  {
    std::lock_guard lock(env_errors_mutex());
    for (const env_error& e : env_errors())
      if (e.prefix == prefix) all += (all.empty() ? "" : "; ") + e.message;
  }
  if (!all.empty()) throw std::invalid_argument(all + " (correct it, or unset it for the default)");
}

/// The unsigned decimal integer in `v` (digits only: no sign, no space), or false (also when it
/// does not fit 64 bits).
inline bool parse_unsigned(const char* v, unsigned long long& x) {
  if (v == nullptr || *v < '0' || *v > '9') return false;
  char* end = nullptr;
  errno = 0;
  x = std::strtoull(v, &end, 10);
  return *end == '\0' && errno != ERANGE;
}

/// The positive integer in environment variable `name`, else `fallback` (unset or empty). Any
/// other value (negative, zero, not a number, beyond 64 bits) is recorded as malformed
/// (bad_environment, under `prefix`: "ki::reference") and the fallback used.
inline std::size_t env_size(const char* prefix, const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  unsigned long long x = 0;
  if (!parse_unsigned(v, x) || x == 0) {
    bad_environment(prefix, name, v, "a positive integer");
    return fallback;
  }
  return static_cast<std::size_t>(x);
}

/// Thrown inside a work-item for errors that are the executor's to name (kind != exception).
struct item_failure {
  kernel_error::kind kind;
  std::string message;
  bool group_level = false;  ///< the message describes the group, not the throwing item
  /// group_level: the work-item the error concerns (its linear local id), e.g. the participant
  /// that disagrees with the others; -1: the throwing one.
  std::int64_t concerns = -1;
  /// Where the failing operation is (line 0: not known; the error names the last sync point).
  source_location at{};
};

/// What the exception a work-item threw says, as an item_failure: an item_failure itself, an
/// out-of-bounds access as "failed a bounds check: <what()>" at its line, else "threw <what()>". Only inside a catch block (it rethrows the exception being handled).
inline item_failure current_failure() {
  try {
    throw;
  } catch (const item_failure& f) {
    return f;
  } catch (const unsupported_operation& u) {
    return {kernel_error::kind::unsupported, u.what(), false, -1, u.where};
  } catch (const out_of_bounds& o) {  // names the access's line: where() is that line
    return {kernel_error::kind::exception,
            std::string("failed a bounds check: ") + o.what() + helper_note(o.pc, o.where, o.caller), false, -1,
            o.where};
  } catch (const std::bad_alloc&) {  // the kernel's own allocation, or an oracle's records of it
    return {kernel_error::kind::resource,
            "ran out of memory (std::bad_alloc) in an allocation of its own or of the backend's records of it "
            "(checked-access mode keeps records per element touched: docs/debugging.md, \"What the checks cost\")"};
  } catch (const std::exception& e) {
    return {kernel_error::kind::exception, std::string("threw ") + e.what()};
  } catch (...) {
    return {kernel_error::kind::exception, "threw an exception that is not a std::exception"};
  }
}

/// One TBB arena per thread count, created on first use and kept for the process. Each backend
/// keeps its own cache (a static object in its executor).
class arena_cache {
 public:
  tbb::task_arena& get(int threads) {
    std::lock_guard lock(m_);
    auto& a = arenas_[threads];
    if (!a) a = std::make_unique<tbb::task_arena>(threads);
    return *a;
  }

 private:
  std::mutex m_;
  std::map<int, std::unique_ptr<tbb::task_arena>> arenas_;
};

/// This thread's group runner of type R (each backend has its own), made again when the stack
/// size asked for is larger than its own or less than half of it.
template <class R>
R& thread_runner(std::size_t stack_size) {
  thread_local std::unique_ptr<R> r;
  if (!r || r->stack_size() < stack_size || r->stack_size() > 2 * stack_size) r = std::make_unique<R>(stack_size);
  return *r;
}

/// The local memory of the work-groups one thread runs: bump allocation in chunks that never
/// move (memory handed out stays valid until reset()), reused after reset().
class local_arena {
 public:
  /// first_chunk > 0: allocate the first chunk now, with that size (simd_cpu publishes its
  /// range as the thread's private memory, see first()).
  explicit local_arena(std::size_t first_chunk = 0) {
    if (first_chunk > 0) add(first_chunk);
  }
  /// `align`: a power of two (an alignof), so that rounding up is a mask, not a 64-bit division
  /// per call (one per local memory site and work-group).
  /// `reused` (optional): how many of the returned bytes, from its start, this arena handed out
  /// before (what earlier work-groups left there; the rest was never handed out).
  void* alloc(std::size_t bytes, std::size_t align, std::size_t* reused = nullptr) {
    assert(align != 0 && (align & (align - 1)) == 0);
    for (;;) {
      if (chunk_ < chunks_.size()) {
        auto& c = chunks_[chunk_];
        // Align the address, not the offset: chunks from new[] are only 16-byte aligned.
        const auto base = reinterpret_cast<std::uintptr_t>(c.p.get());
        const std::size_t off = ((base + used_ + align - 1) & ~(align - 1)) - base;
        if (off + bytes <= c.size) {
          used_ = off + bytes;
          if (reused != nullptr) *reused = off >= c.high ? 0 : std::min(bytes, c.high - off);
          c.high = std::max(c.high, used_);
          return c.p.get() + off;
        }
        ++chunk_;
        used_ = 0;
        continue;
      }
      add(bytes + align > 64 * 1024 ? bytes + align : 64 * 1024);
      chunk_ = chunks_.size() - 1;
    }
  }
  void reset() { chunk_ = 0, used_ = 0; }
  /// The first chunk's address range [begin, end) (empty before the first allocation).
  std::pair<std::uintptr_t, std::uintptr_t> first() const {
    if (chunks_.empty()) return {0, 0};
    const auto b = reinterpret_cast<std::uintptr_t>(chunks_.front().p.get());
    return {b, b + chunks_.front().size};
  }

 private:
  struct chunk {
    std::unique_ptr<unsigned char[]> p;
    std::size_t size;
    std::size_t high = 0;  ///< the end of what was ever handed out
  };
  void add(std::size_t size) {
    chunks_.push_back({std::unique_ptr<unsigned char[]>(new unsigned char[size]), size, 0});
  }
  std::vector<chunk> chunks_;
  std::size_t chunk_ = 0, used_ = 0;
};

/// How both executors hand over from a suspending work-item to a released one, at the end of a
/// barrier's fast path: prefetch what `after` (the work-item to run after k; -1: none) will
/// need, touch the switch's frame (an overflow in the switch is self's), let enter(k) mark k
/// running and current, and switch. Nothing follows the switch, so that the callers' calls
/// of it are tail calls (docs/design.md, "The barrier's fast path").
template <class Item, class Enter>
KI_ALWAYS_INLINE void hand_over(fiber_core& fibers, const Item* items, int self, int k, int after, Enter enter) {
  if (after >= 0) {
    fibers.prefetch(after);
    __builtin_prefetch(items + after);
  }
  fibers.touch_switch_frame();
  enter(k);
  fibers.switch_to(self, k);
}

}  // namespace ki::detail::cpu
