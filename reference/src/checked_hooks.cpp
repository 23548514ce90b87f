// Checked-access mode's instrumentation hooks: the ThreadSanitizer entry points that the
// compiler calls from translation units built with -fsanitize=thread (what ki::reference_checked
// adds to its consumers' compile options, without the TSan runtime at link time), defined here
// so that every plain load and store of kernel code reaches the oracle's recorder
// (ki/detail/cpu/checked.hpp) as what it is, a read or a write, with the address of the
// instruction that made it.
//
// Contracts and surprises:
// * This file must not itself be instrumented (the build compiles it with -fno-sanitize=thread),
//   and it is not built at all in a -DKI_SANITIZE=thread build: the real TSan runtime defines the
//   same symbols. A program cannot link both (duplicate symbols): docs/debugging.md.
// * Being in the static library ki_reference, this object is linked only into programs that
//   reference a __tsan_* symbol, i.e. that have an instrumented translation unit.
// * Instrumented code calls these from any thread, at any time, before main too: outside a
//   recorder (checked::active null: no work-group of a checked launch runs on this thread) a
//   plain access costs a thread-local load and a branch.
// * The atomic entry points replace the operation: they perform it (sequentially consistent,
//   whatever order was asked: stronger is exact, and the oracle runs the work-items of a group
//   one at a time anyway). Atomics are not recorded as accesses (they never race), but the
//   recorder is told of each one, and of each fence, with the order asked (weak memory,
//   store_buffer.hpp: a release publishes the work-item's stores).
// * A recorder's own callbacks (e.g. a trace hook in an instrumented translation unit) make
//   accesses too; `busy` keeps those out of the record.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/cpu/executor.hpp>

namespace {
namespace checked = ki::detail::checked;

constinit thread_local bool busy = false;

[[gnu::always_inline]] inline void record(const void* p, std::size_t n, bool write, const void* pc) {
  checked::recorder* r = checked::active;
  if (r == nullptr || busy) [[likely]]
    return;
  busy = true;
  r->plain(p, n, write, pc);
  busy = false;
}
/// An atomic operation at p, or a fence (p null), with the memory order `mo` (an __ATOMIC_*
/// value: the same numbering the instrumentation passes), before it happens; `writes`: it may
/// store (not a load).
[[gnu::always_inline]] inline void ordering(const volatile void* p, int mo, bool writes = true) {
  checked::recorder* r = checked::active;
  if (r == nullptr || busy) [[likely]]
    return;
  busy = true;
  r->ordering(const_cast<const void*>(p), mo, writes);
  busy = false;
}
constexpr int seq_cst = __ATOMIC_SEQ_CST;

// The shadow call stacks (checked::shadow_calls): one per work-item (its item_state; KA phases,
// which run their work-items one after another to the end, share the thread's null one), since
// the work-items of a KI group switch at barriers in the middle of their functions. Kept only
// while a recorder runs; a stack holds at most 256 frames (deeper calls are counted, not kept).
using stack = std::vector<const void*>;
struct stacks {
  std::unordered_map<const void*, stack> by_item;
  const void* owner = nullptr;
  stack* current = nullptr;
};
constinit thread_local stacks* shadow = nullptr;
constexpr std::size_t max_depth = 256;
struct deep_count {
  std::unordered_map<const void*, std::size_t> by_item;
};
constinit thread_local deep_count* deep = nullptr;

stack& running_stack() {
  const void* owner = ki::detail::cpu::current;
  if (shadow->current == nullptr || shadow->owner != owner) {
    shadow->current = &shadow->by_item[owner];
    shadow->owner = owner;
  }
  return *shadow->current;
}
const void* caller_of(const void* pc) {
  if (shadow == nullptr) return nullptr;
  const stack& s = running_stack();
  for (std::size_t k = s.size(); k-- > 0 && k + 8 >= s.size();)  // (the error path's few frames)
    if (s[k] == pc) return k > 0 ? s[k - 1] : nullptr;
  return s.empty() ? nullptr : s.back();
}
void forget_all() {
  if (shadow == nullptr) return;
  shadow->by_item.clear();
  shadow->current = nullptr;
  if (deep != nullptr) deep->by_item.clear();
}
void enter(const void* pc) {
  if (checked::active == nullptr || busy) [[likely]]
    return;
  busy = true;
  if (shadow == nullptr) {
    shadow = new stacks;  // (per thread, never freed: hooks run until the thread's end)
    deep = new deep_count;
    checked::calls = {&caller_of, &forget_all};
  }
  stack& s = running_stack();
  if (s.size() < max_depth) s.push_back(pc);
  else ++deep->by_item[shadow->owner];
  busy = false;
}
void leave() {
  if (checked::active == nullptr || busy || shadow == nullptr) [[likely]]
    return;
  busy = true;
  stack& s = running_stack();
  if (!deep->by_item.empty()) {
    if (auto it = deep->by_item.find(shadow->owner); it != deep->by_item.end() && it->second > 0) {
      --it->second;
      busy = false;
      return;
    }
  }
  if (!s.empty()) s.pop_back();
  busy = false;
}
}  // namespace

#define KI_RA __builtin_return_address(0)

extern "C" {
// Instrumented code calls these, with the C ABI, from any thread: default visibility, no
// exceptions (the recorder's `plain` does not throw).
void __tsan_init() {}
void __tsan_func_entry(void* caller) { enter(caller); }
void __tsan_func_exit() { leave(); }

#define KI_PLAIN(n)                                                                  \
  void __tsan_read##n(void* p) { record(p, n, false, KI_RA); }                       \
  void __tsan_write##n(void* p) { record(p, n, true, KI_RA); }                       \
  void __tsan_unaligned_read##n(void* p) { record(p, n, false, KI_RA); }             \
  void __tsan_unaligned_write##n(void* p) { record(p, n, true, KI_RA); }             \
  void __tsan_volatile_read##n(void* p) { record(p, n, false, KI_RA); }              \
  void __tsan_volatile_write##n(void* p) { record(p, n, true, KI_RA); }              \
  void __tsan_read##n##_pc(void* p, void* pc) { record(p, n, false, pc); }           \
  void __tsan_write##n##_pc(void* p, void* pc) { record(p, n, true, pc); }           \
  void __tsan_unaligned_read##n##_pc(void* p, void* pc) { record(p, n, false, pc); } \
  void __tsan_unaligned_write##n##_pc(void* p, void* pc) { record(p, n, true, pc); }
KI_PLAIN(1)
KI_PLAIN(2)
KI_PLAIN(4)
KI_PLAIN(8)
KI_PLAIN(16)
#undef KI_PLAIN
void __tsan_read_range(void* p, unsigned long n) { record(p, n, false, KI_RA); }
void __tsan_write_range(void* p, unsigned long n) { record(p, n, true, KI_RA); }
void __tsan_read_range_pc(void* p, unsigned long n, void* pc) { record(p, n, false, pc); }
void __tsan_write_range_pc(void* p, unsigned long n, void* pc) { record(p, n, true, pc); }
// A virtual call reads the object's vptr; a constructor writes it (the object's own memory).
void __tsan_vptr_read(void** p) { record(p, sizeof(void*), false, KI_RA); }
void __tsan_vptr_update(void** p, void*) { record(p, sizeof(void*), true, KI_RA); }

// Clang routes memcpy/memmove/memset of instrumented code here (GCC leaves them to libc, unseen).
void* __tsan_memcpy(void* d, const void* s, std::size_t n) {
  record(s, n, false, KI_RA);
  record(d, n, true, KI_RA);
  return std::memcpy(d, s, n);
}
void* __tsan_memmove(void* d, const void* s, std::size_t n) {
  record(s, n, false, KI_RA);
  record(d, n, true, KI_RA);
  return std::memmove(d, s, n);
}
void* __tsan_memset(void* d, int c, std::size_t n) {
  record(d, n, true, KI_RA);
  return std::memset(d, c, n);
}

void __tsan_atomic_thread_fence(int mo) {
  ordering(nullptr, mo);
  __atomic_thread_fence(seq_cst);
}
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(seq_cst); }

#define KI_ATOMIC(bits, T)                                                                   \
  T __tsan_atomic##bits##_load(const volatile T* a, int mo) {                                \
    ordering(a, mo, false);                                                                  \
    return __atomic_load_n(a, seq_cst);                                                      \
  }                                                                                          \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int mo) {                             \
    ordering(a, mo);                                                                         \
    __atomic_store_n(a, v, seq_cst);                                                         \
  }                                                                                          \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int mo) {                             \
    ordering(a, mo);                                                                         \
    return __atomic_exchange_n(a, v, seq_cst);                                               \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int mo) {                            \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_add(a, v, seq_cst);                                                \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int mo) {                            \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_sub(a, v, seq_cst);                                                \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int mo) {                            \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_and(a, v, seq_cst);                                                \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int mo) {                             \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_or(a, v, seq_cst);                                                 \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int mo) {                            \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_xor(a, v, seq_cst);                                                \
  }                                                                                          \
  T __tsan_atomic##bits##_fetch_nand(volatile T* a, T v, int mo) {                           \
    ordering(a, mo);                                                                         \
    return __atomic_fetch_nand(a, v, seq_cst);                                               \
  }                                                                                          \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, int mo, int) { \
    ordering(a, mo);                                                                         \
    return __atomic_compare_exchange_n(a, c, v, false, seq_cst, seq_cst);                    \
  }                                                                                          \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v, int mo, int) {   \
    ordering(a, mo);                                                                         \
    return __atomic_compare_exchange_n(a, c, v, false, seq_cst, seq_cst);                    \
  }                                                                                          \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int mo, int) {       \
    ordering(a, mo);                                                                         \
    __atomic_compare_exchange_n(a, &c, v, false, seq_cst, seq_cst);                          \
    return c;                                                                                \
  }
KI_ATOMIC(8, std::uint8_t)
KI_ATOMIC(16, std::uint16_t)
KI_ATOMIC(32, std::uint32_t)
KI_ATOMIC(64, std::uint64_t)
#if defined(__SIZEOF_INT128__) && defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
KI_ATOMIC(128, unsigned __int128)
#endif
#undef KI_ATOMIC
}
#undef KI_RA
