// Spec: atomics (ki::atomic_load / store / exchange / compare_exchange / fetch_add / fetch_sub /
// fetch_and / fetch_or / fetch_xor / fetch_min / fetch_max / atomic_update, ki::memory_order,
// ki::atomic_thread_fence) on elements of global memory (ki::span) and of local memory
// (localmemory), for int32, uint32 and float everywhere supports_atomics holds, and for int64,
// uint64 where supports_atomics64 holds, and double where supports_float64 holds too (the
// "(64-bit types)" tests skip otherwise).
//
// Every expected value is computed on the host from the known inputs (closed form, or by plain
// host arithmetic over the same inputs), never by the library: histograms of known data,
// counters of exactly N increments from N work-items in many groups, min/max of known values,
// bit patterns, products, permutations of the values that exchange hands out, sums of floats
// that are exact (or checked against an error bound), a compare-exchange spin lock, and
// release/acquire message passing between work-groups.
//
// Local-memory variants do the operations on localmemory elements and merge the group's result
// into global memory after a barrier. On the reference backend the work-groups of a launch run
// on several host threads at once (its atomics are std::atomic_ref, exercised for real); the
// contended tests also run with `.threads = 1` (groups one after another).
//
// Not covered here: a work-item waiting for another work-item of its own work-group (a spin on a
// local or global flag within a group). The spec gives no forward-progress guarantee between
// work-items of a group outside barriers, and the oracle runs them as cooperative fibers, so
// such a wait may never end. Compile-time errors (fetch_and/or/xor/min/max on float or double)
// are checked by the compile_fail tests in CMakeLists.txt.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends.hpp"

namespace ki_spec_atomics {

using i64 = std::int64_t;
using u64 = std::uint64_t;

/// The largest work-group the local-memory kernels use (their arrays have this many elements).
constexpr i64 max_items = 256;

enum space : int { global_space = 0, local_space = 1 };

template <class T>
constexpr bool is_fp = std::is_floating_point_v<T>;
template <class T>
using uint_of = std::make_unsigned_t<std::conditional_t<is_fp<T>, int, T>>;

/// A small value k as T, spread over the upper half of 64-bit integers (k * 2^32 + k) so that
/// those types use all their bits; plain k for 32-bit types and floating point.
template <class T>
KI_DEVICE constexpr T wide(i64 k) {
  if constexpr (std::is_integral_v<T> && sizeof(T) == 8)
    return static_cast<T>(static_cast<T>(k) * static_cast<T>(0x100000000ll) + static_cast<T>(k));
  else return static_cast<T>(k);
}

/// A fixed pseudo-random 64-bit word of i (splitmix64's finaliser).
KI_DEVICE constexpr u64 mix(u64 i) {
  u64 z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The word mix(i) as the integer T (truncated; modular conversion to signed types).
template <class T>
KI_DEVICE constexpr T bits_of(u64 w) {
  return static_cast<T>(static_cast<uint_of<T>>(w));
}

template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else return "double";
}

constexpr ki::memory_order all_orders[] = {ki::memory_order::relaxed, ki::memory_order::acquire,
                                           ki::memory_order::release, ki::memory_order::acq_rel,
                                           ki::memory_order::seq_cst};
inline const char* order_name(ki::memory_order o) {
  switch (o) {
    case ki::memory_order::relaxed: return "relaxed";
    case ki::memory_order::acquire: return "acquire";
    case ki::memory_order::release: return "release";
    case ki::memory_order::acq_rel: return "acq_rel";
    default: return "seq_cst";
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Every operation once, in a fixed sequence, by each work-item on its own element: the
//    returned values are exactly determined (single-thread observable), for every memory order.

/// The values of work-item g's sequence.
template <class T>
struct seq_values {
  T a, b, c, d, z;        // store / exchange / add / sub / compare-exchange
  T p1, m1, m2, m3;       // and / or / xor (integers)
  T mm0, v1, v2, v3, v4;  // min / max (integers)
  KI_DEVICE constexpr explicit seq_values(i64 g)
      : a(wide<T>(g % 97 + 1)),
        b(wide<T>(g % 89 + 200)),
        c(wide<T>(g % 7 + 1)),
        d(wide<T>(g % 5 + 2)),
        z(wide<T>(g % 11 + 3)),
        p1(),
        m1(),
        m2(),
        m3(),
        mm0(),
        v1(),
        v2(),
        v3(),
        v4() {
    if constexpr (std::is_integral_v<T>) {
      using U = uint_of<T>;
      constexpr int nbits = 8 * sizeof(T);
      p1 = bits_of<T>(mix(static_cast<u64>(g)));
      m1 = bits_of<T>(0xF0F0F0F0F0F0F0F0ull >> (g % 4));
      m2 = static_cast<T>(static_cast<U>(U(1) << (g % nbits)));
      m3 = bits_of<T>(mix(static_cast<u64>(g) + 1000));
      if constexpr (std::is_signed_v<T>) {
        mm0 = wide<T>(-5 - g % 13);   // negative start
        v1 = wide<T>(7);              // > mm0: min keeps mm0
        v2 = wide<T>(-1000 - g % 3);  // < mm0: min takes it
        v3 = wide<T>(-2000);          // < v2: max keeps v2
        v4 = wide<T>(-1);             // > v2: max takes it (still negative)
      } else {
        // Values with the top bit set: a signed comparison would give other results.
        mm0 = static_cast<T>(static_cast<T>(~T(0)) - 5 - static_cast<T>(g % 13));
        v1 = static_cast<T>(~T(0));                                      // > mm0: min keeps mm0
        v2 = static_cast<T>(5 + g % 3);                                  // < mm0 (unsigned)
        v3 = T(3);                                                       // < v2: max keeps v2
        v4 = static_cast<T>((T(1) << (nbits - 1)) + static_cast<T>(g));  // > v2 (unsigned)
      }
    }
  }
};

constexpr int seq_results = 21;

/// A user function for atomic_update (not a native atomic): x * 3.
template <class T>
struct times3 {
  KI_DEVICE T operator()(T x) const {
    if constexpr (is_fp<T>) return x * T(3);
    else return static_cast<T>(static_cast<uint_of<T>>(x) * 3u);
  }
};

template <class T>
KI_DEVICE void run_sequence(T* p, i64 g, ki::memory_order o, T* r) {
  const seq_values<T> s(g);
  ki::atomic_thread_fence(o);
  ki::atomic_store(p, s.a, o);
  r[0] = ki::atomic_load(p, o);
  r[1] = ki::atomic_exchange(p, s.b, o);
  r[2] = ki::atomic_fetch_add(p, s.c, o);
  r[3] = ki::atomic_fetch_sub(p, s.d, o);
  T e = s.a;  // not the current value (b + c - d)
  r[4] = ki::atomic_compare_exchange(p, e, s.z, o) ? T(1) : T(0);
  r[5] = e;  // failure: the current value
  r[6] = ki::atomic_compare_exchange(p, e, s.z, o) ? T(1) : T(0);
  r[7] = e;  // success: unchanged
  r[8] = ki::atomic_load(p, o);
  r[9] = ki::atomic_update(p, times3<T>{}, o);
  r[10] = ki::atomic_update(
      p, [](T x) { return static_cast<T>(x - T(1)); }, o);
  r[11] = ki::atomic_load(p, o);
  if constexpr (std::is_integral_v<T>) {
    ki::atomic_store(p, s.p1, o);
    r[12] = ki::atomic_fetch_and(p, s.m1, o);
    r[13] = ki::atomic_fetch_or(p, s.m2, o);
    r[14] = ki::atomic_fetch_xor(p, s.m3, o);
    r[15] = ki::atomic_load(p, o);
    ki::atomic_store(p, s.mm0, o);
    r[16] = ki::atomic_fetch_min(p, s.v1, o);
    r[17] = ki::atomic_fetch_min(p, s.v2, o);
    r[18] = ki::atomic_fetch_max(p, s.v3, o);
    r[19] = ki::atomic_fetch_max(p, s.v4, o);
    r[20] = ki::atomic_load(p, o);
  } else {
    for (int k = 12; k < seq_results; ++k) r[k] = T(0);
  }
  ki::atomic_thread_fence(o);
}

template <class T>
struct sequence_kernel {
  KI_DEVICE void operator()(ki::span<T> out, ki::span<T> cells, int where, int order) const {
    auto loc = ki::localmemory<T, max_items>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    T* p = where == global_space ? &cells[gl] : &loc[l];
    run_sequence<T>(p, gl, static_cast<ki::memory_order>(order), &out[gl * seq_results]);
    if (where == local_space) cells[gl] = loc[l];  // its own element: no barrier needed
  }
};

/// The host's expectation of run_sequence for work-item g (result k), and the final value.
template <class T>
std::vector<T> expected_sequence(i64 g) {
  const seq_values<T> s(g);
  std::vector<T> r(seq_results + 1, T(0));
  const T cur = static_cast<T>(static_cast<T>(s.b + s.c) - s.d);
  r[0] = s.a;
  r[1] = s.a;
  r[2] = s.b;
  r[3] = static_cast<T>(s.b + s.c);
  r[4] = 0;
  r[5] = cur;
  r[6] = 1;
  r[7] = cur;
  r[8] = s.z;
  r[9] = s.z;
  const T z3 = times3<T>{}(s.z);
  r[10] = z3;
  r[11] = static_cast<T>(z3 - T(1));
  r[seq_results] = r[11];
  if constexpr (std::is_integral_v<T>) {
    r[12] = s.p1;
    r[13] = static_cast<T>(s.p1 & s.m1);
    r[14] = static_cast<T>((s.p1 & s.m1) | s.m2);
    r[15] = static_cast<T>(((s.p1 & s.m1) | s.m2) ^ s.m3);
    r[16] = s.mm0;  // v1 > mm0
    r[17] = s.mm0;  // then v2 < mm0
    r[18] = s.v2;   // v3 < v2
    r[19] = s.v2;   // then v4 > v2
    r[20] = s.v4;
    r[seq_results] = s.v4;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// 2. Counters: N work-items in many groups each add 1 (and subtract 1 from a second counter).

template <class T>
struct counter_kernel {
  /// counters: [0] += 1, [1] -= 1 (global); per group g: [2 + 2g], [3 + 2g] (local, merged).
  KI_DEVICE void operator()(ki::span<T> counters, ki::span<T> olds_add, ki::span<T> olds_sub, int where) const {
    auto loc = ki::localmemory<T, 2>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x,
              gl = ki::get_global_id().x;
    if (where == global_space) {
      olds_add[gl] = ki::atomic_fetch_add(&counters[0], T(1));
      olds_sub[gl] = ki::atomic_fetch_sub(&counters[1], T(1));
    } else {
      if (l == 0) {
        loc[0] = T(0);
        loc[1] = static_cast<T>(n);
      }
      ki::barrier();
      olds_add[gl] = ki::atomic_fetch_add(&loc[0], T(1));
      olds_sub[gl] = ki::atomic_fetch_sub(&loc[1], T(1));
      ki::barrier();
      if (l == 0) {
        counters[2 + 2 * g] = loc[0];
        counters[3 + 2 * g] = loc[1];
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// 3. A histogram of known data (global bins, or local bins merged with one add per bin).

constexpr i64 nbins = 37;
KI_DEVICE constexpr i64 bin_of(i64 i) {
  return (i * 7 + i / 13 + static_cast<i64>(mix(static_cast<u64>(i)) % 5)) % nbins;
}

template <class T>
struct histogram_kernel {
  KI_DEVICE void operator()(ki::span<T> hist, int where) const {
    auto loc = ki::localmemory<T, nbins>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, gl = ki::get_global_id().x;
    if (where == global_space) {
      ki::atomic_fetch_add(&hist[bin_of(gl)], T(1));
      return;
    }
    for (i64 k = l; k < nbins; k += n) loc[k] = T(0);
    ki::barrier();
    ki::atomic_fetch_add(&loc[bin_of(gl)], T(1));
    ki::barrier();
    for (i64 k = l; k < nbins; k += n)
      if (loc[k] != T(0)) ki::atomic_fetch_add(&hist[k], loc[k]);
  }
};

// ---------------------------------------------------------------------------------------------
// 4. Sums of known values: exact (integers modulo 2^bits; floats of multiples of 1/4), and
//    floats that are not exactly representable, checked against an error bound.

/// Work-item i's addend: signed types and floats get negative ones too.
template <class T>
KI_DEVICE constexpr T addend(i64 i) {
  if constexpr (is_fp<T>) return static_cast<T>(static_cast<double>(i % 11 - 5) * 0.25);
  else if constexpr (std::is_signed_v<T>) return wide<T>(i % 11 - 5);
  else return static_cast<T>(wide<T>(i % 11) * static_cast<T>(0x10001u));  // wraps: modular sums
}
/// Inexact addends: 1 / (1 + i % 13).
template <class T>
KI_DEVICE constexpr T inexact(i64 i) {
  return T(1) / static_cast<T>(1 + i % 13);
}

template <class T>
struct sum_kernel {
  /// sums: [0] += addend, [1] -= addend, [2] += inexact; local: the group's sums merged in.
  KI_DEVICE void operator()(ki::span<T> sums, int where) const {
    auto loc = ki::localmemory<T, 3>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    if (where == global_space) {
      ki::atomic_fetch_add(&sums[0], addend<T>(gl));
      ki::atomic_fetch_sub(&sums[1], addend<T>(gl));
      if constexpr (is_fp<T>) ki::atomic_fetch_add(&sums[2], inexact<T>(gl));
      return;
    }
    if (l < 3) loc[l] = T(0);
    ki::barrier();
    ki::atomic_fetch_add(&loc[0], addend<T>(gl));
    ki::atomic_fetch_sub(&loc[1], addend<T>(gl));
    if constexpr (is_fp<T>) ki::atomic_fetch_add(&loc[2], inexact<T>(gl));
    ki::barrier();
    if (l < 3) ki::atomic_fetch_add(&sums[l], loc[l]);
  }
};

// ---------------------------------------------------------------------------------------------
// 5. fetch_min / fetch_max over known values (integers), and and / or / xor bit patterns.

template <class T>
KI_DEVICE constexpr T minmax_value(i64 i) {
  if constexpr (std::is_signed_v<T>) return wide<T>(static_cast<i64>(mix(static_cast<u64>(i)) % 200001) - 100000);
  else return bits_of<T>(mix(static_cast<u64>(i)));  // the whole range, top bit set in about half
}

template <class T>
struct minmax_kernel {
  /// mm: [0] min, [1] max (global or merged from local); per group g: [2 + 2g], [3 + 2g]
  /// (local only). init: the identities (largest and smallest T).
  KI_DEVICE void operator()(ki::span<T> mm, T lo_identity, T hi_identity, int where) const {
    auto loc = ki::localmemory<T, 2>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x, gl = ki::get_global_id().x;
    const T v = minmax_value<T>(gl);
    if (where == global_space) {
      ki::atomic_fetch_min(&mm[0], v);
      ki::atomic_fetch_max(&mm[1], v);
      return;
    }
    if (l == 0) {
      loc[0] = lo_identity;
      loc[1] = hi_identity;
    }
    ki::barrier();
    ki::atomic_fetch_min(&loc[0], v);
    ki::atomic_fetch_max(&loc[1], v);
    ki::barrier();
    if (l == 0) {
      mm[2 + 2 * g] = loc[0];
      mm[3 + 2 * g] = loc[1];
      ki::atomic_fetch_min(&mm[0], loc[0]);
      ki::atomic_fetch_max(&mm[1], loc[1]);
    }
  }
};

constexpr i64 nbitcells = 4;
/// Work-item i's masks: or sets one even bit, and clears one odd bit, xor flips a random word.
template <class T>
KI_DEVICE constexpr T or_mask(i64 i) {
  using U = uint_of<T>;
  return static_cast<T>(static_cast<U>(U(1) << (2 * (mix(static_cast<u64>(i)) % (4 * sizeof(T))))));
}
template <class T>
KI_DEVICE constexpr T and_mask(i64 i) {
  using U = uint_of<T>;
  return static_cast<T>(static_cast<U>(~(U(1) << (2 * (mix(static_cast<u64>(i) + 7) % (4 * sizeof(T))) + 1))));
}
template <class T>
KI_DEVICE constexpr T xor_mask(i64 i) {
  return bits_of<T>(mix(static_cast<u64>(i) * 3 + 1));
}

template <class T>
struct bits_kernel {
  /// cells: [0, 4) or, [4, 8) and, [8, 12) xor; item i works on cell i % 4 of each.
  KI_DEVICE void operator()(ki::span<T> cells, T and_init, int where) const {
    auto loc = ki::localmemory<T, 3 * nbitcells>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, gl = ki::get_global_id().x;
    const i64 c = gl % nbitcells;
    T* base = where == global_space ? &cells[0] : &loc[0];
    if (where == local_space) {
      for (i64 k = l; k < 3 * nbitcells; k += n) loc[k] = k < nbitcells ? T(0) : k < 2 * nbitcells ? and_init : T(0);
      ki::barrier();
    }
    ki::atomic_fetch_or(base + c, or_mask<T>(gl));
    ki::atomic_fetch_and(base + nbitcells + c, and_mask<T>(gl));
    ki::atomic_fetch_xor(base + 2 * nbitcells + c, xor_mask<T>(gl));
    if (where == local_space) {
      ki::barrier();
      for (i64 k = l; k < nbitcells; k += n) {
        ki::atomic_fetch_or(&cells[k], loc[k]);
        ki::atomic_fetch_and(&cells[nbitcells + k], loc[nbitcells + k]);
        ki::atomic_fetch_xor(&cells[2 * nbitcells + k], loc[2 * nbitcells + k]);
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// 6. atomic_update with operations that have no native atomic: a product, a saturating add
//    (a user functor), and min / max as user lambdas (the way to write them for float).

template <class T>
KI_DEVICE constexpr T factor(i64 i) {
  // Few powers of two (the partial products stay far from overflow in any order), and a 3.
  if constexpr (is_fp<T>) return i == 0 ? T(3) : i % 64 == 1 ? T(2) : i % 128 == 3 ? T(0.5) : T(1);
  else return static_cast<T>(2 * (i % 4) + 1);  // odd: the product modulo 2^bits never vanishes
}
template <class T>
struct multiply_by {
  T f;
  KI_DEVICE T operator()(T x) const {
    if constexpr (is_fp<T>) return x * f;
    else return static_cast<T>(static_cast<uint_of<T>>(x) * static_cast<uint_of<T>>(f));
  }
};
/// min(x + v, cap) for v >= 0: the result is min(start + sum, cap) in any order.
template <class T>
struct saturating_add {
  T v, cap;
  KI_DEVICE T operator()(T x) const {
    const T s = static_cast<T>(x + v);
    return s < cap ? s : cap;
  }
};
template <class T>
KI_DEVICE constexpr T update_value(i64 i) {  // for min / max through atomic_update
  if constexpr (is_fp<T>)
    return static_cast<T>(static_cast<double>(static_cast<i64>(mix(static_cast<u64>(i)) % 2001) - 1000) * 0.125);
  else return minmax_value<T>(i);
}
template <class T>
KI_DEVICE constexpr T sat_step(i64 i) {
  return static_cast<T>(i % 3 + 1);
}

template <class T>
struct update_kernel {
  /// cells: [0] product, [1] saturating add (high cap), [2] saturating add (low cap), [3] min,
  /// [4] max. init: the start values (local cells start there too, and are merged in with the
  /// same operation: product, sum of the increments, min, max).
  KI_DEVICE void operator()(ki::span<T> cells, T high_cap, T low_cap, T lo_identity, T hi_identity, int where) const {
    auto loc = ki::localmemory<T, 5>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    T* base = where == global_space ? &cells[0] : &loc[0];
    if (where == local_space) {
      if (l == 0) {
        loc[0] = T(1);
        loc[1] = T(0);
        loc[2] = T(0);
        loc[3] = lo_identity;
        loc[4] = hi_identity;
      }
      ki::barrier();
    }
    const T v = update_value<T>(gl);
    ki::atomic_update(base + 0, multiply_by<T>{factor<T>(gl)});
    ki::atomic_update(base + 1, saturating_add<T>{sat_step<T>(gl), high_cap}, ki::memory_order::acq_rel);
    ki::atomic_update(base + 2, saturating_add<T>{sat_step<T>(gl), low_cap}, ki::memory_order::seq_cst);
    ki::atomic_update(base + 3, [v](T x) { return v < x ? v : x; });
    ki::atomic_update(
        base + 4, [v](T x) { return v > x ? v : x; }, ki::memory_order::release);
    if (where == local_space) {
      ki::barrier();
      if (l == 0) {
        const T prod = loc[0], s1 = loc[1], s2 = loc[2], mn = loc[3], mx = loc[4];
        ki::atomic_update(&cells[0], multiply_by<T>{prod});
        ki::atomic_update(&cells[1], saturating_add<T>{s1, high_cap});
        ki::atomic_update(&cells[2], saturating_add<T>{s2, low_cap});
        ki::atomic_update(&cells[3], [mn](T x) { return mn < x ? mn : x; });
        ki::atomic_update(&cells[4], [mx](T x) { return mx > x ? mx : x; });
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// 7. exchange: a chain. The cell starts at 0; item i swaps in i + 1. Every value 0 .. N is
//    taken out exactly once (the last one is left in the cell).

template <class T>
struct exchange_kernel {
  /// olds[gl]: what item gl took out; finals[0] (global) or finals[g] (local): what was left.
  KI_DEVICE void operator()(ki::span<T> olds, ki::span<T> finals, int where) const {
    auto loc = ki::localmemory<T, 1>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x, gl = ki::get_global_id().x;
    if (where == global_space) {
      olds[gl] = ki::atomic_exchange(&finals[0], static_cast<T>(gl + 1), ki::memory_order::acq_rel);
      return;
    }
    if (l == 0) loc[0] = T(0);
    ki::barrier();
    olds[gl] = ki::atomic_exchange(&loc[0], static_cast<T>(l + 1));
    ki::barrier();
    if (l == 0) finals[g] = ki::atomic_load(&loc[0]);
  }
};

// ---------------------------------------------------------------------------------------------
// 8. compare_exchange: a counter by compare-exchange loops (each failure must return a value
//    other than the one expected: strong, no spurious failure), and a spin lock taken by one
//    work-item per group around a plain (non-atomic) read-modify-write of global memory.

template <class T>
struct cas_counter_kernel {
  /// counter[0] (global) or counter[1 + g] (local); bad[gl]: failures that returned the
  /// expected value unchanged (a spurious or wrong failure).
  KI_DEVICE void operator()(ki::span<T> counter, ki::span<T> bad, int where) const {
    auto loc = ki::localmemory<T, 1>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x, gl = ki::get_global_id().x;
    if (where == local_space) {
      if (l == 0) loc[0] = T(0);
      ki::barrier();
    }
    T* p = where == global_space ? &counter[0] : &loc[0];
    T e = ki::atomic_load(p);
    T wrong = T(0);
    for (;;) {
      const T before = e;
      if (ki::atomic_compare_exchange(p, e, static_cast<T>(e + T(1)), ki::memory_order::acq_rel)) break;
      if (e == before) {  // a failure must load a different current value into expected
        wrong = T(1);
        break;
      }
    }
    bad[gl] = wrong;
    if (where == local_space) {
      ki::barrier();
      if (l == 0) counter[1 + g] = loc[0];
    }
  }
};

template <class T>
struct spin_lock_kernel {
  /// lock[0]: 0 free, 1 taken. value[0]: incremented under the lock (plain); log[k]: the
  /// group that held the lock for the k-th time (plain write at the value's old count).
  /// bad[g]: times a failed compare-exchange did not return 1 (the only other value).
  KI_DEVICE void operator()(ki::span<T> lock, ki::span<T> value, ki::span<i64> log, ki::span<i64> bad,
                            int rounds) const {
    if (ki::get_local_id().x != 0) return;  // one work-item per group takes the lock
    const i64 g = ki::get_group_id().x;
    i64 wrong = 0;
    for (int r = 0; r < rounds; ++r) {
      T e = T(0);
      while (!ki::atomic_compare_exchange(&lock[0], e, T(1), ki::memory_order::acquire)) {
        if (e != T(1)) ++wrong;
        e = T(0);
      }
      const T v = value[0];  // plain accesses, ordered by the lock
      log[static_cast<i64>(v)] = g;
      value[0] = static_cast<T>(v + T(1));
      ki::atomic_store(&lock[0], T(0), ki::memory_order::release);
    }
    bad[g] = wrong;
  }
};

// ---------------------------------------------------------------------------------------------
// 9. Message passing between work-groups. Each group writes its data (plain stores), then each
//    of its work-items adds 1 to the group's flag with release; group g > 0 first waits until
//    the flag of group g - 1 counts all its items (acquire), then reads g - 1's data (plain
//    loads): it must see all of it. mode 1 does the same with relaxed atomics and
//    atomic_thread_fence(release / acquire).
//
//    modes 2 and 3 (run only under the reference backend's weak memory, where their outcome is
//    defined): relaxed atomics and no fence on the writer's side (2: a missing release), or a
//    relaxed load and no fence on the reader's (3: a missing acquire); the data must then be stale.
//
//    Forward progress: a group only ever waits for an *earlier* group. The spec does not
//    promise that work-groups run concurrently: the reference backend with `.threads = 1` runs
//    them one after another in order (so a wait for a later group would never end, while a wait
//    for an earlier one is already satisfied), with several threads each thread takes groups in
//    increasing order (an earlier group is running or will be run by a thread that does not
//    wait for it), and a GPU dispatches groups in increasing order and keeps the few groups
//    used here resident together. So the test terminates on every backend.

constexpr i64 mp_groups = 8, mp_items = 64;
template <class T>
KI_DEVICE constexpr T message(i64 g, i64 l) {
  return wide<T>(g * 100 + l + 1);
}

template <class T>
struct message_kernel {
  KI_DEVICE void operator()(ki::span<T> data, ki::span<T> flags, ki::span<T> seen, int mode) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    if (g > 0) {
      if (mode == 0 || mode == 2) {
        while (ki::atomic_load(&flags[g - 1], ki::memory_order::acquire) != static_cast<T>(n)) {
        }
      } else if (mode == 3) {
        while (ki::atomic_load(&flags[g - 1]) != static_cast<T>(n)) {  // BUG (mode 3): no acquire
        }
      } else {
        while (ki::atomic_load(&flags[g - 1]) != static_cast<T>(n)) {
        }
        ki::atomic_thread_fence(ki::memory_order::acquire);
      }
      T s = T(0);
      for (i64 j = 0; j < n; ++j) s = static_cast<T>(s + data[(g - 1) * n + j]);
      seen[g * n + l] = s;
    }
    data[g * n + l] = message<T>(g, l);
    if (mode == 0 || mode == 3) {
      ki::atomic_fetch_add(&flags[g], T(1), ki::memory_order::release);
    } else if (mode == 1) {
      ki::atomic_thread_fence(ki::memory_order::release);
      ki::atomic_fetch_add(&flags[g], T(1));
    } else {
      ki::atomic_fetch_add(&flags[g], T(1));  // BUG (mode 2): nothing publishes the data
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Host helpers.

template <class B>
void require_atomics(const B& b) {
  if (!ki::supports_atomics(b))
    SKIP(std::string(ki_test::config<B>::name) + ": supports_atomics is false (" + ki_test::config<B>::describe(b) +
         ")");
}
template <class B>
void require_atomics64(const B& b) {
  require_atomics(b);
  if (!ki::supports_atomics64(b))
    SKIP(std::string(ki_test::config<B>::name) + ": supports_atomics64 is false (" + ki_test::config<B>::describe(b) +
         "): no atomics on int64, uint64, double");
}

/// The backend as the test gets it, and (where the backend has the setting) with one host
/// thread, so that contended tests run both with groups in parallel and one after another.
template <class B>
std::vector<std::pair<B, std::string>> thread_variants(const B& b) {
  std::vector<std::pair<B, std::string>> v{{b, "default threads"}};
  if constexpr (requires(B x) { x.threads = 1; }) {
    B one = b;
    one.threads = 1;
    v.emplace_back(one, "threads = 1");
    B four = b;
    four.threads = 4;
    v.emplace_back(four, "threads = 4");
  }
  // The oracle can also interleave a group's work-items at each atomic operation (not only at
  // barriers): local-memory atomics then contend as they do on a GPU (compare-exchange loops
  // fail and retry), and the results must not change.
  if constexpr (requires(B x) { x.schedule.interleave_atomics = true; }) {
    B interleaved = b;
    interleaved.schedule.interleave_atomics = true;
    v.emplace_back(interleaved, "interleaved at atomics");
  }
  return v;
}

const char* space_name(int where) { return where == global_space ? "global" : "local"; }

template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// ---------------------------------------------------------------------------------------------
// Test bodies, one per type.

template <class T, class B>
void test_sequence(const B& b) {
  const i64 groups = 5, n = 64, N = groups * n;
  for (int where : {global_space, local_space})
    for (ki::memory_order o : all_orders) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, memory_order::" << order_name(o));
      auto out = ki_test::filled<T>(b, N * seq_results, T(0));
      auto cells = ki_test::filled<T>(b, N, T(0));
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, sequence_kernel<T>{}, out, cells, where,
                 static_cast<int>(o));
      const auto got = ki_test::read(b, out);
      const auto fin = ki_test::read(b, cells);
      std::vector<std::vector<T>> expected(static_cast<std::size_t>(N));
      for (i64 g = 0; g < N; ++g) expected[static_cast<std::size_t>(g)] = expected_sequence<T>(g);
      ki_test::check_all(
          got,
          [&](i64 i) {
            return expected[static_cast<std::size_t>(i / seq_results)][static_cast<std::size_t>(i % seq_results)];
          },
          "returned values (element k of item i at i * 21 + k: 0 load, 1 exchange, 2 add, 3 sub, "
          "4-7 compare_exchange, 8 load, 9-10 update, 11 load, 12 and, 13 or, 14 xor, 15 load, "
          "16-17 min, 18-19 max, 20 load)");
      ki_test::check_all(
          fin, [&](i64 i) { return expected[static_cast<std::size_t>(i)][seq_results]; }, "final values");
    }
}

template <class T, class B>
void test_counter(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 96, n = 128, N = groups * n;
      std::vector<T> init(static_cast<std::size_t>(2 + 2 * groups), T(0));
      init[1] = static_cast<T>(N);
      auto counters = ki::to_device(b, init);
      auto olds_add = ki_test::filled<T>(b, N, T(0));
      auto olds_sub = ki_test::filled<T>(b, N, T(0));
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, counter_kernel<T>{}, counters, olds_add, olds_sub,
                 where);
      const auto c = ki_test::read(b, counters);
      const auto a = ki_test::read(b, olds_add);
      const auto s = ki_test::read(b, olds_sub);
      if (where == global_space) {
        CHECK(c[0] == static_cast<T>(N));
        CHECK(c[1] == T(0));
        // Each value was returned exactly once: 0 .. N - 1 by the adds, N .. 1 by the subs.
        ki_test::check_all(
            sorted(a), [](i64 i) { return i; }, "values returned by fetch_add, sorted");
        ki_test::check_all(
            sorted(s), [](i64 i) { return i + 1; }, "values returned by fetch_sub, sorted");
      } else {
        ki_test::check_all(
            std::vector<T>(c.begin() + 2, c.end()), [&](i64 i) { return i % 2 == 0 ? n : 0; },
            "per group: local counters after n adds, n subs");
        std::size_t bad = 0;
        for (i64 g = 0; g < groups; ++g) {
          const auto lo = static_cast<std::ptrdiff_t>(g * n), hi = static_cast<std::ptrdiff_t>((g + 1) * n);
          const auto sa = sorted(std::vector<T>(a.begin() + lo, a.begin() + hi));
          const auto ss = sorted(std::vector<T>(s.begin() + lo, s.begin() + hi));
          for (i64 k = 0; k < n; ++k)
            bad += (sa[static_cast<std::size_t>(k)] != static_cast<T>(k)) +
                   (ss[static_cast<std::size_t>(k)] != static_cast<T>(k + 1));
        }
        KI_INFO("groups whose returned values are not a permutation of 0 .. n-1 / 1 .. n: " << bad << " mismatches");
        CHECK(bad == 0);
      }
    }
}

template <class T, class B>
void test_histogram(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space})
      for (i64 n : {1, 37, 128}) {
        KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads << ", work-group size " << n);
        const i64 groups = 50, N = groups * n;
        std::vector<T> expected(nbins, T(0));
        for (i64 i = 0; i < N; ++i) expected[static_cast<std::size_t>(bin_of(i))] += T(1);
        auto hist = ki_test::filled<T>(b, nbins, T(0));
        ki::launch(b, {.numgroups = groups, .workgroupsize = n}, histogram_kernel<T>{}, hist, where);
        ki_test::check_all(
            ki_test::read(b, hist), [&](i64 i) { return expected[static_cast<std::size_t>(i)]; }, "histogram");
      }
}

template <class T, class B>
void test_sums(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 64, n = 128, N = groups * n;
      const T start1 = is_fp<T> ? T(0) : wide<T>(1000);
      auto sums = ki::to_device(b, std::vector<T>{T(0), start1, T(0)});
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, sum_kernel<T>{}, sums, where);
      const auto got = ki_test::read(b, sums);
      // Exact sums: integers in modular (unsigned) arithmetic, floats of multiples of 1/4.
      uint_of<T> s_int = 0;
      long double s_fp = 0, s_inexact = 0, s_abs = 0;
      for (i64 i = 0; i < N; ++i) {
        if constexpr (is_fp<T>) {
          s_fp += static_cast<long double>(addend<T>(i));
          s_inexact += static_cast<long double>(inexact<T>(i));
          s_abs += std::fabs(static_cast<long double>(inexact<T>(i)));
        } else {
          s_int = static_cast<uint_of<T>>(s_int + static_cast<uint_of<T>>(addend<T>(i)));
        }
      }
      if constexpr (is_fp<T>) {
        CHECK(got[0] == static_cast<T>(s_fp));
        CHECK(got[1] == static_cast<T>(-s_fp));
        // Any order of N additions: |error| <= (N - 1) * eps * sum |x| (to first order; the
        // factor N leaves room for the second-order terms).
        const long double bound = static_cast<long double>(N) * std::numeric_limits<T>::epsilon() * s_abs;
        KI_INFO("inexact sum " << +got[2] << ", exact " << static_cast<double>(s_inexact) << ", bound "
                               << static_cast<double>(bound));
        CHECK(std::fabs(static_cast<long double>(got[2]) - s_inexact) <= bound);
      } else {
        CHECK(got[0] == static_cast<T>(s_int));
        CHECK(got[1] == static_cast<T>(static_cast<uint_of<T>>(static_cast<uint_of<T>>(start1) - s_int)));
      }
    }
}

template <class T, class B>
void test_minmax(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 40, n = 96, N = groups * n;
      const T hi = std::numeric_limits<T>::max(), lo = std::numeric_limits<T>::lowest();
      std::vector<T> init(static_cast<std::size_t>(2 + 2 * groups), T(0));
      init[0] = hi;
      init[1] = lo;
      auto mm = ki::to_device(b, init);
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, minmax_kernel<T>{}, mm, hi, lo, where);
      const auto got = ki_test::read(b, mm);
      std::vector<T> expected(static_cast<std::size_t>(2 + 2 * groups), T(0));
      expected[0] = hi;
      expected[1] = lo;
      bool negative = false;
      for (i64 i = 0; i < N; ++i) {
        const T v = minmax_value<T>(i);
        negative = negative || (std::is_signed_v<T> && v < T(0));
        expected[0] = std::min(expected[0], v);
        expected[1] = std::max(expected[1], v);
        if (where == local_space) {
          const auto g = static_cast<std::size_t>(i / n);
          if (i % n == 0) expected[2 + 2 * g] = v, expected[3 + 2 * g] = v;
          expected[2 + 2 * g] = std::min(expected[2 + 2 * g], v);
          expected[3 + 2 * g] = std::max(expected[3 + 2 * g], v);
        }
      }
      if constexpr (std::is_signed_v<T>) CHECK(negative);  // the data has negative values
      ki_test::check_all(
          got, [&](i64 i) { return expected[static_cast<std::size_t>(i)]; },
          "[0] min, [1] max, then per group (local) min, max");
    }
}

template <class T, class B>
void test_bits(const B& b0) {
  using U = uint_of<T>;
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 24, n = 64, N = groups * n;
      const T ones = static_cast<T>(~U(0)), xor_init = bits_of<T>(0x0123456789ABCDEFull);
      std::vector<T> init(3 * nbitcells, T(0));
      for (i64 k = 0; k < nbitcells; ++k) {
        init[static_cast<std::size_t>(nbitcells + k)] = ones;
        init[static_cast<std::size_t>(2 * nbitcells + k)] = xor_init;
      }
      auto cells = ki::to_device(b, init);
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, bits_kernel<T>{}, cells, ones, where);
      std::vector<T> expected = init;
      for (i64 i = 0; i < N; ++i) {
        const auto c = static_cast<std::size_t>(i % nbitcells);
        expected[c] = static_cast<T>(expected[c] | or_mask<T>(i));
        expected[nbitcells + c] = static_cast<T>(expected[nbitcells + c] & and_mask<T>(i));
        expected[2 * nbitcells + c] = static_cast<T>(expected[2 * nbitcells + c] ^ xor_mask<T>(i));
      }
      // The patterns are not trivial: or sets only even bits, and clears only odd bits.
      CHECK(expected[0] != T(0));
      CHECK(expected[0] != ones);
      CHECK(expected[nbitcells] != ones);
      ki_test::check_all(
          ki_test::read(b, cells), [&](i64 i) { return expected[static_cast<std::size_t>(i)]; },
          "[0, 4) or, [4, 8) and, [8, 12) xor");
    }
}

template <class T, class B>
void test_update(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 32, n = 64, N = groups * n;
      const T hi = std::numeric_limits<T>::max(), lo = std::numeric_limits<T>::lowest();
      T prod = T(1), sum = T(0), mn = hi, mx = lo;
      for (i64 i = 0; i < N; ++i) {
        prod = multiply_by<T>{factor<T>(i)}(prod);
        sum = static_cast<T>(sum + sat_step<T>(i));
        mn = std::min(mn, update_value<T>(i));
        mx = std::max(mx, update_value<T>(i));
      }
      const T high_cap = static_cast<T>(sum + T(10)), low_cap = static_cast<T>(sum / T(3));
      auto cells = ki::to_device(b, std::vector<T>{T(1), T(0), T(0), hi, lo});
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, update_kernel<T>{}, cells, high_cap, low_cap, hi, lo,
                 where);
      const auto got = ki_test::read(b, cells);
      KI_INFO("product " << +prod << ", sum " << +sum << ", min " << +mn << ", max " << +mx);
      CHECK(prod != T(1));
      CHECK(got[0] == prod);
      CHECK(got[1] == sum);  // below the cap: every increment counted
      CHECK(got[2] == low_cap);
      CHECK(got[3] == mn);
      CHECK(got[4] == mx);
    }
}

template <class T, class B>
void test_exchange(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 48, n = 128, N = groups * n;
      auto olds = ki_test::filled<T>(b, N, T(-1));
      auto finals = ki_test::filled<T>(b, groups, T(0));
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, exchange_kernel<T>{}, olds, finals, where);
      auto o = ki_test::read(b, olds);
      const auto f = ki_test::read(b, finals);
      if (where == global_space) {
        o.push_back(f[0]);
        ki_test::check_all(
            sorted(o), [](i64 i) { return i; }, "values taken out, and the last one left, sorted");
      } else {
        std::size_t bad = 0;
        for (i64 g = 0; g < groups; ++g) {
          std::vector<T> v(o.begin() + static_cast<std::ptrdiff_t>(g * n),
                           o.begin() + static_cast<std::ptrdiff_t>((g + 1) * n));
          v.push_back(f[static_cast<std::size_t>(g)]);
          v = sorted(v);
          for (i64 k = 0; k <= n; ++k) bad += v[static_cast<std::size_t>(k)] != static_cast<T>(k);
        }
        KI_INFO("groups whose values taken out (and left) are not 0 .. n: " << bad << " mismatches");
        CHECK(bad == 0);
      }
    }
}

template <class T, class B>
void test_cas_counter(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0))
    for (int where : {global_space, local_space}) {
      KI_INFO(type_name<T>() << ", " << space_name(where) << " memory, " << threads);
      const i64 groups = 64, n = 64, N = groups * n;
      auto counter = ki_test::filled<T>(b, 1 + groups, T(0));
      auto bad = ki_test::filled<T>(b, N, T(-1));
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, cas_counter_kernel<T>{}, counter, bad, where);
      const auto c = ki_test::read(b, counter);
      ki_test::check_all(
          ki_test::read(b, bad), [](i64) { return 0; }, "failed compare_exchange left expected unchanged");
      if (where == global_space) CHECK(c[0] == static_cast<T>(N));
      else
        ki_test::check_all(
            std::vector<T>(c.begin() + 1, c.end()), [&](i64) { return n; }, "local counters");
    }
}

template <class T, class B>
void test_spin_lock(const B& b0) {
  for (const auto& [b, threads] : thread_variants(b0)) {
    KI_INFO(type_name<T>() << ", " << threads);
    const i64 groups = 64, n = 32;
    const int rounds = 16;
    const i64 total = groups * rounds;
    auto lock = ki_test::filled<T>(b, 1, T(0));
    auto value = ki_test::filled<T>(b, 1, T(0));
    auto log = ki_test::filled<i64>(b, total, -1);
    auto bad = ki_test::filled<i64>(b, groups, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, spin_lock_kernel<T>{}, lock, value, log, bad, rounds);
    CHECK(ki_test::read(b, value)[0] == static_cast<T>(total));
    CHECK(ki_test::read(b, lock)[0] == T(0));
    ki_test::check_all(
        ki_test::read(b, bad), [](i64) { return 0; }, "failures that did not return the lock's value 1");
    // Each slot of the log written once: every group appears exactly `rounds` times.
    ki_test::check_all(
        sorted(ki_test::read(b, log)), [&](i64 i) { return i / rounds; }, "lock holders, sorted");
  }
}

/// The reference backend with weak memory (ki::reference::memory_model::weak), in a build whose
/// kernels it can see (checked-access mode with the hooks: spec/reference-weak-memory).
template <class B>
bool weak_memory(const B& b) {
#if KI_CHECKED_HOOKS
  if constexpr (requires { b.memory; }) return b.memory == ki::reference::memory_model::weak;
#endif
  (void)b;
  return false;
}

template <class T, class B>
void test_message_passing(const B& b0) {
  const bool weak = weak_memory(b0);
  for (const auto& [b, threads] : thread_variants(b0))
    for (int mode : {0, 1, 2, 3}) {
      if (mode >= 2 && !weak) continue;  // a data race: what it reads is defined only by the weak model
      KI_INFO(type_name<T>() << ", " << threads
                             << (mode == 0   ? ", release/acquire atomics"
                                 : mode == 1 ? ", relaxed atomics and fences"
                                 : mode == 2 ? ", no release (weak memory)"
                                             : ", no acquire (weak memory)"));
      const i64 n = mp_items, N = mp_groups * n;
      for (int rep = 0; rep < 5; ++rep) {
        auto data = ki_test::filled<T>(b, N, T(0));
        auto flags = ki_test::filled<T>(b, mp_groups, T(0));
        auto seen = ki_test::filled<T>(b, N, T(0));
        ki::launch(b, {.numgroups = mp_groups, .workgroupsize = n}, message_kernel<T>{}, data, flags, seen, mode);
        ki_test::check_all(
            ki_test::read(b, flags), [&](i64) { return n; }, "flags");
        if (mode >= 2) {
          // Weak memory: without the release, a group's plain stores stay in its work-items'
          // buffers until the launch's end; without the acquire, a later group does not see
          // them though they are published. Either way each later group reads the zeros from
          // before them; the launch's end publishes them all.
          ki_test::check_all(
              ki_test::read(b, seen), [&](i64) { return T(0); },
              "the previous group's data as each work-item saw it: stale (no release, or no acquire)");
          ki_test::check_all(
              ki_test::read(b, data), [&](i64 i) { return message<T>(i / n, i % n); },
              "the data after the launch (its end publishes every store)");
          continue;
        }
        ki_test::check_all(
            ki_test::read(b, seen),
            [&](i64 i) {
              const i64 g = i / n;
              T s = T(0);
              if (g > 0)
                for (i64 j = 0; j < n; ++j) s = static_cast<T>(s + message<T>(g - 1, j));
              return s;
            },
            "sum of the previous group's data, as each work-item saw it after the flag");
      }
    }
}

}  // namespace ki_spec_atomics

using namespace ki_spec_atomics;

// Each topic twice: for int32, uint32 (and float) where supports_atomics holds, and for int64,
// uint64 (and double) where supports_atomics64 holds (skipped otherwise, with the reason).
#define KI_ATOMIC_TEST(title, body, with_float)                                                \
  TEMPLATE_LIST_TEST_CASE("atomic: " title " (32-bit types)", "[atomic]", ki_test::backends) { \
    const auto b = ki_test::make<TestType>();                                                  \
    require_atomics(b);                                                                        \
    body<std::int32_t>(b);                                                                     \
    body<std::uint32_t>(b);                                                                    \
    if constexpr (with_float) body<float>(b);                                                  \
  }                                                                                            \
  TEMPLATE_LIST_TEST_CASE("atomic: " title " (64-bit types)", "[atomic]", ki_test::backends) { \
    const auto b = ki_test::make<TestType>();                                                  \
    require_atomics64(b);                                                                      \
    body<std::int64_t>(b);                                                                     \
    body<std::uint64_t>(b);                                                                    \
    if constexpr (with_float)                                                                  \
      if (ki::supports_float64(b)) body<double>(b); /* double also needs float64 */            \
  }

KI_ATOMIC_TEST("every operation returns the right values, with every memory order", test_sequence, true)
KI_ATOMIC_TEST("a counter gets exactly N increments from N work-items in many groups", test_counter, true)
KI_ATOMIC_TEST("a histogram of known data", test_histogram, true)
KI_ATOMIC_TEST("fetch_add / fetch_sub sums (exact, and floats within an error bound)", test_sums, true)
KI_ATOMIC_TEST("fetch_min / fetch_max over known values", test_minmax, false)
KI_ATOMIC_TEST("fetch_and / fetch_or / fetch_xor bit patterns", test_bits, false)
KI_ATOMIC_TEST("atomic_update with non-native operations (product, saturating add, min, max)", test_update, true)
KI_ATOMIC_TEST("exchange hands out every value exactly once", test_exchange, true)
KI_ATOMIC_TEST("compare_exchange loops: strong, failure returns the current value", test_cas_counter, true)
KI_ATOMIC_TEST("a compare_exchange spin lock, one work-item per group", test_spin_lock, true)
KI_ATOMIC_TEST("message passing from each group to the next (release / acquire, fences)", test_message_passing, true)

TEMPLATE_LIST_TEST_CASE("atomic: supports_atomics holds on the suite's devices", "[atomic]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  KI_INFO(ki_test::config<TestType>::describe(b));
  CHECK(ki::supports_atomics(b));  // every backend and profile the suite runs models 32-bit atomics
  // supports_atomics64 is what the device has, read from its configuration (not from ki): the
  // oracle's profile field (false on the apple preset), always on simd_cpu (host atomics).
#if KI_TEST_BACKEND_REFERENCE
  if constexpr (std::is_same_v<TestType, ki::reference::backend>)
    CHECK(ki::supports_atomics64(b) == b.device.atomics64);
#endif
#if KI_TEST_BACKEND_SIMD_CPU
  if constexpr (std::is_same_v<TestType, ki::simd_cpu::backend>) CHECK(ki::supports_atomics64(b));
#endif
}

#if KI_TEST_BACKEND_REFERENCE
TEST_CASE("atomic: the reference profiles report their atomics", "[atomic]") {
  const ki::reference::backend def{.device = ki::reference::profile{}};
  CHECK(ki::supports_atomics(def));
  CHECK(ki::supports_atomics64(def));
  const ki::reference::backend apple{.device = ki::reference::profile::preset("apple")};
  CHECK(ki::supports_atomics(apple));
  CHECK_FALSE(ki::supports_atomics64(apple));  // Metal: no general 64-bit atomics
  // Every other preset has both.
  for (const auto& p : ki::reference::profile::presets()) {
    if (std::string_view(p.name) == "apple") continue;
    KI_INFO(p.name);
    const ki::reference::backend b{.device = p};
    CHECK(ki::supports_atomics(b));
    CHECK(ki::supports_atomics64(b));
  }
}
#endif
