// Checked-access mode with the instrumentation hooks (KI_CHECKED_HOOKS, what ki::reference_checked
// compiles with on GCC and Clang): every plain load and store is recorded as what it is, with its
// own line. Each kernel here was misreported, or not reported, when a store was told from a load
// by comparing an element's bytes at the end of a work-item's stretch, and when only subscripts
// were recorded (issue 20, items 1 and 6).
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ka.hpp>

#include "gallery_support.hpp"

namespace {

using namespace ki_test::gallery;
using kind = ki::kernel_error::kind;
const std::string this_file = "checked_hooks.cpp";
std::string at(unsigned line) { return this_file + ":" + std::to_string(line); }

/// The error's message, or "" (no error).
std::string what(const outcome& o) { return o.error ? std::string(o.error->what()) : std::string(); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// (the tests name the lines of these kernels' accesses, counted from __LINE__: kept as they are)
// clang-format off

/// A stencil without its barrier: each work-item writes its element of local memory, then reads
/// its own and its neighbour's. Work-item 1 writes element 1 (line_write) after work-item 0 read
/// it (line_read), and then reads it itself (line_read): the write is named by line_write.
struct stencil_without_barrier {
  static constexpr unsigned line_mem = __LINE__ + 2, line_write = __LINE__ + 4, line_read = __LINE__ + 5;
  void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, i = ki::get_global_id().x;
    buf[l] = in[i];
    out[i] = buf[l] + buf[(l + 1) % n];  // BUG: no barrier before reading the neighbour's element
  }
};

/// Work-items 0 and 1 store `value` to out[0] with nothing between them.
struct two_stores {
  static constexpr unsigned line = __LINE__ + 4;
  i64 value;
  void operator()(ki::span<i64> out) const {
    if (ki::get_local_id().x < 2)
      out[0] = value;
  }
};

/// A tiled sum that lacks the barrier at the end of its loop: the next tile's store overwrites an
/// element the other work-items may still read. With equal tiles, every store writes the value
/// the element already holds.
struct tiled_without_trailing_barrier {
  static constexpr unsigned line_mem = __LINE__ + 2, line_write = __LINE__ + 6, line_read = __LINE__ + 8;
  void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    auto tile = ki::localmemory<i64, 8>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    i64 acc = 0;
    for (i64 t = 0; t < in.size() / n; ++t) {
      tile[l] = in[t * n + l];
      ki::barrier();
      for (i64 k = 0; k < n; ++k) acc += tile[k];
      // BUG: no ki::barrier() here
    }
    out[ki::get_global_id().x] = acc;
  }
};

/// The neighbour exchange through a raw pointer into global memory (a ki::span's data()), never
/// subscripting the span.
struct pointer_global {
  static constexpr unsigned line_write = __LINE__ + 4, line_read = __LINE__ + 5;
  void operator()(ki::span<i64> out) const {
    i64* p = out.data();
    const i64 i = ki::get_local_id().x, n = ki::get_local_size().x;
    p[i] = i + 1;
    const i64 v = p[(i + 1) % n];  // BUG: no barrier
    ki::barrier();
    p[i] = v;
  }
};

/// The same through a raw pointer into local memory.
struct pointer_local {
  static constexpr unsigned line_mem = __LINE__ + 2, line_write = __LINE__ + 5, line_read = __LINE__ + 6;
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    i64* p = buf.data();
    const i64 i = ki::get_local_id().x, n = ki::get_local_size().x;
    p[i] = i + 1;
    out[i] = p[(i + 1) % n];  // BUG: no barrier
  }
};

/// Atomics on local and global memory, through subscripts and pointers, integer and float (a
/// compare-exchange loop): the hooks perform them; they never race.
struct atomics_everywhere {
  ki::span<float> sum;
  void operator()(ki::span<i64> out) const {
    auto c = ki::localmemory<i64, 1>([] {});
    auto f = ki::localmemory<float, 1>([] {});
    const i64 l = ki::get_local_id().x;
    if (l == 0) c[0] = 0, f[0] = 0;
    ki::barrier();
    ki::atomic_fetch_add(&c[0], i64{1});
    ki::atomic_fetch_add(c.data(), i64{2});
    ki::atomic_fetch_add(f.data(), 0.5f);
    ki::atomic_fetch_max(&c[0], i64{0});
    ki::atomic_fetch_add(sum.data(), 1.0f);
    ki::barrier();
    out[ki::get_global_id().x] = c[0] + static_cast<i64>(2 * f[0]);
  }
};

/// KA: every work-item adds to one localmem counter atomically in one phase (local memory there
/// is group-private: atomics on it must still reach the hooks as atomics, not as plain accesses).
struct ka_atomics {
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    auto c = g.template localmem<i64, 1>([] {});
    g.items([&](auto i) {
      if (i.local_linear() == 0) c[0] = 0;
    });
    g.synchronize();
    g.items([&](auto i) {
      out[i.global_linear()] = 0;  // (a plain access first: the previous item's are judged now)
      ki::atomic_fetch_add(&c[0], i64{1});
      ki::atomic_fetch_add(c.data(), i64{2});
      c.atomic_fetch_add(0, i64{3});  // (ki::ka::local_array's own, by index)
      i64 seen = c.atomic_load(0);
      while (!c.atomic_compare_exchange(0, seen, seen + 4)) {
      }
    });
    g.synchronize();
    g.items([&](auto i) { out[i.global_linear()] = c[0]; });
  }
};

/// A KA kernel's neighbour exchange through a pointer into its localmem, in one phase.
struct ka_pointer {
  static constexpr unsigned line_write = __LINE__ + 6, line_read = __LINE__ + 7;
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    auto buf = g.template localmem<i64, 16>([] {});
    g.items([&](auto i) {
      i64* p = buf.data();
      p[i.local_linear()] = i.local_linear();
      out[i.global_linear()] = p[(i.local_linear() + 1) % 16];
    });
  }
};
/// The stencil's race through indexing helpers (as OpenCL macros become): the accesses are at
/// the helpers' lines, and the report adds the kernel's lines (issue 36, item 5): `at` returns a
/// reference, which the kernel uses (used at ...); `get` reads the element itself, inlined into
/// its caller (in a function called at ...).
struct stencil_through_helper {
  static constexpr unsigned base = __LINE__, line_at = base + 5, line_get = base + 6, line_write = base + 7,
                            line_read = base + 8;
  void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, i = ki::get_global_id().x;
    const auto at = [&](i64 k) -> i64& { return buf[k % n]; };
    const auto get = [&](i64 k) { return buf[k % n]; };
    at(l) = in[i];
    out[i] = get(l) + get(l + 1);  // BUG: no barrier before reading the neighbour's element
  }
};

/// The same in a KA kernel: the helpers called from two phases' statements without a synchronize.
struct ka_through_helper {
  static constexpr unsigned base = __LINE__, line_at = base + 5, line_get = base + 6, line_write = base + 7,
                            line_read = base + 8;
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    auto p = g.template localmem<i64, 16>([] {});
    const auto at = [&](i64 k) -> i64& { return p[k % 16]; };
    const auto get = [&](i64 k) { return p[k % 16]; };
    g.items([&](auto i) { at(i.local_linear()) = i.local_linear(); });
    g.items([&](auto i) { out[i.global_linear()] = get(i.local_linear() + 1); });  // BUG: no synchronize
  }
};
/// An index one past the end, made inside a helper that reads the element itself.
struct out_of_bounds_in_helper {
  static constexpr unsigned base = __LINE__, line_get = base + 2, line_call = base + 3;
  void operator()(ki::span<i64> out) const {
    const auto get = [&](i64 k) { return out[k + 1]; };
    if (ki::get_global_id().x == 0) out[0] = get(out.size() - 1);
  }
};
/// Helpers the compiler does not inline: their callers' lines come from the shadow call stack.
[[gnu::noinline]] i64 read_element(ki::span<const i64> s, i64 k) {
  return s[k];  // line_read_element
}
constexpr unsigned line_read_element = __LINE__ - 2;
struct out_of_bounds_in_noinline_helper {
  static constexpr unsigned line_call = __LINE__ + 2;
  void operator()(ki::span<i64> out) const {
    if (ki::get_global_id().x == 0) out[0] = read_element(out, out.size());
  }
};
struct race_in_noinline_helper {
  static constexpr unsigned line_write = __LINE__ + 4, line_call = __LINE__ + 5;
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    buf[l] = l;
    out[ki::get_global_id().x] = read_element(buf.as_span(), (l + 1) % n);  // BUG: no barrier
  }
};
// clang-format on

}  // namespace

TEST_CASE("checked: a race names the write by the write's line and the read by the read's",
          "[oracle][checked][hooks]") {
  const auto b = backend_for("cuda");
  std::vector<i64> h(64, 1);
  auto in = ki::to_device(b, h);
  const auto o = run(b, stencil_without_barrier{}, 1, 64, in);
  REQUIRE(o.error);
  CHECK(o.error->error_kind() == kind::data_race);
  const std::string w = what(o);
  INFO(w);
  CHECK(has(w, "read-write race on element 1 of localmemory at " + at(stencil_without_barrier::line_mem) +
                   ": work-item (0, 0, 0) read it at " + at(stencil_without_barrier::line_read) +
                   ", then work-item (1, 0, 0) wrote it at " + at(stencil_without_barrier::line_write)));
}

TEST_CASE("checked: two stores of the value already there race (write-write)", "[oracle][checked][hooks]") {
  const auto o = run(backend_for("cuda"), two_stores{0}, 1, 8);  // out is zeros
  REQUIRE(o.error);
  CHECK(o.error->error_kind() == kind::data_race);
  const std::string w = what(o);
  INFO(w);
  CHECK(has(w, "write-write race on element 0 of a ki::span of 8 elements: work-item (0, 0, 0) wrote it at " +
                   at(two_stores::line) + ", then work-item (1, 0, 0) wrote it at " + at(two_stores::line)));
  // The policy that allows writes of an unchanged value lets them pass.
  auto allowed = backend_for("cuda");
  allowed.same_value_writes = ki::reference::same_value_writes::allowed;
  CHECK(!run(allowed, two_stores{0}, 1, 8).error);
}

TEST_CASE("checked: after a real write, another item's store of the same value is a write",
          "[oracle][checked][hooks]") {
  for (const std::uint64_t seed : {0, 1}) {
    INFO("seed " << seed);
    const auto o = run(backend_for("cuda", seed), two_stores{7}, 1, 8);
    REQUIRE(o.error);
    const std::string w = what(o);
    INFO(w);
    const std::string first = seed == 0 ? "(0, 0, 0)" : "(1, 0, 0)", second = seed == 0 ? "(1, 0, 0)" : "(0, 0, 0)";
    CHECK(has(w, "write-write race on element 0 of a ki::span of 8 elements: work-item " + first + " wrote it at " +
                     at(two_stores::line) + ", then work-item " + second + " wrote it at " + at(two_stores::line)));
    CHECK(!has(w, "read it"));
  }
}

TEST_CASE("checked: a tiled loop without its trailing barrier races also when the tiles are equal",
          "[oracle][checked][hooks]") {
  const auto b = backend_for("cuda");
  for (const i64 fill : {1, 0}) {  // (from the second tile on, every store writes the value already there)
    INFO("tiles of " << fill);
    std::vector<i64> h(32, fill);
    auto in = ki::to_device(b, h);
    const auto o = run(b, tiled_without_trailing_barrier{}, 1, 8, in);
    REQUIRE(o.error);
    CHECK(o.error->error_kind() == kind::data_race);
    const std::string w = what(o);
    INFO(w);
    CHECK(has(w, "race on element 0 of localmemory at " + at(tiled_without_trailing_barrier::line_mem) +
                     ": work-item (0, 0, 0) wrote it at " + at(tiled_without_trailing_barrier::line_write) +
                     ", then work-item (1, 0, 0) read it at " + at(tiled_without_trailing_barrier::line_read)));
  }
}

TEST_CASE("checked: races through raw pointers into global and local memory", "[oracle][checked][hooks]") {
  const auto b = backend_for("cuda");
  const auto g = run(b, pointer_global{}, 1, 64);
  REQUIRE(g.error);
  CHECK(g.error->error_kind() == kind::data_race);
  const std::string wg = what(g);
  INFO(wg);
  CHECK(has(wg, "read-write race on element 1 of a ki::span of 64 elements: work-item (0, 0, 0) read it at " +
                    at(pointer_global::line_read) + ", then work-item (1, 0, 0) wrote it at " +
                    at(pointer_global::line_write)));

  const auto l = run(b, pointer_local{}, 1, 64);
  REQUIRE(l.error);
  CHECK(l.error->error_kind() == kind::data_race);
  const std::string wl = what(l);
  INFO(wl);
  CHECK(has(wl, "read-write race on element 1 of localmemory at " + at(pointer_local::line_mem) +
                    ": work-item (0, 0, 0) read it at " + at(pointer_local::line_read) +
                    ", then work-item (1, 0, 0) wrote it at " + at(pointer_local::line_write)));
  // The read of an element nothing wrote yet, through the pointer: the warning names its line.
  bool warned = false;
  for (const auto& x : l.warnings) warned |= has(x.message, "read at " + at(pointer_local::line_read));
  CHECK(warned);
}

TEST_CASE("checked: atomics through the hooks never race and compute the atomic result", "[oracle][checked][hooks]") {
  for (const std::string p : {"cuda", "amd-wave64"}) {
    INFO("profile " << p);
    const auto b = backend_for(p);
    auto sum = ki::zeros<float>(b, 1);
    const auto o = run(b, atomics_everywhere{ki::span<float>(sum.data(), 1)}, 2, 64);
    CHECK(!o.error);
    INFO(what(o));
    CHECK(o.out == std::vector<i64>(128, 3 * 64 + 64));
    CHECK(ki::to_host(b, sum)[0] == 128.0f);
  }
}

TEST_CASE("checked: KA atomics on localmem through the hooks never race", "[oracle][checked][hooks]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 32);
  std::string w;
  try {
    ki::ka::kernel(b, ka_atomics{}, ki::ka::groupsize<16>)({.ndrange = 32, .name = "ka_atomics"}, out);
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    w = e.what();
  }
  INFO(w);
  CHECK(w.empty());
  CHECK(ki::to_host(b, out) == std::vector<i64>(32, 10 * 16));
}

TEST_CASE("checked: a KA race through a pointer into localmem", "[oracle][checked][hooks]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 16);
  std::string w;
  try {
    ki::ka::kernel(b, ka_pointer{}, ki::ka::groupsize<16>)({.ndrange = 16, .name = "ka_pointer"}, out);
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == kind::data_race);
    w = e.what();
  }
  INFO(w);
  CHECK(has(w, "race on element 1 of localmem"));
  CHECK(has(w, "work-item (0, 0, 0) read it at " + at(ka_pointer::line_read) +
                   ", then work-item (1, 0, 0) wrote it at " + at(ka_pointer::line_write)));
}

TEST_CASE("checked: a race inside a helper names the kernel's lines that reached it", "[oracle][checked][hooks]") {
  // (Helpers inlined in an optimised build: their call sites are in the accesses' inlining
  // chains. Without optimisation only the helpers' lines can be named.)
  const auto b = backend_for("cuda");
  std::vector<i64> h(64, 1);
  auto in = ki::to_device(b, h);
  const auto o = run(b, stencil_through_helper{}, 1, 64, in);
  REQUIRE(o.error);
  CHECK(o.error->error_kind() == kind::data_race);
  const std::string w = what(o);
  INFO(w);
  CHECK(has(w, "read it at " + at(stencil_through_helper::line_get)));
  CHECK(has(w, "wrote it at " + at(stencil_through_helper::line_at)));
#ifdef __OPTIMIZE__
  CHECK(has(w, "read it at " + at(stencil_through_helper::line_get) + " (in a function called at " +
                   at(stencil_through_helper::line_read) + ")"));
  CHECK(has(w, "wrote it at " + at(stencil_through_helper::line_at) + " (used at " +
                   at(stencil_through_helper::line_write) + ")"));
#endif
  // Accesses in the kernel's own body name nothing more.
  const auto plain = run(b, stencil_without_barrier{}, 1, 64, in);
  REQUIRE(plain.error);
  CHECK(!has(what(plain), "called at"));
  CHECK(!has(what(plain), "used at"));
}

TEST_CASE("checked: a KA race inside a helper names the phases' lines that reached it", "[oracle][checked][hooks]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 16);
  std::string w;
  try {
    ki::ka::kernel(b, ka_through_helper{}, ki::ka::groupsize<16>)({.ndrange = 16}, out);
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == kind::data_race);
    w = e.what();
  }
  INFO(w);
  CHECK(has(w, "race on element 1 of localmem"));
#ifdef __OPTIMIZE__
  CHECK(
      has(w, "wrote it at " + at(ka_through_helper::line_at) + " (used at " + at(ka_through_helper::line_write) + ")"));
  CHECK(has(w, "read it at " + at(ka_through_helper::line_get) + " (in a function called at " +
                   at(ka_through_helper::line_read) + ")"));
#endif
}

TEST_CASE("checked: an index out of bounds inside a helper names the line that called it", "[oracle][checked][hooks]") {
  const auto o = run(backend_for("cuda"), out_of_bounds_in_helper{}, 1, 1);  // out: 1 element
  REQUIRE(o.error);
  const std::string w = what(o);
  INFO(w);
  CHECK(has(w, "index 1 is out of bounds at " + at(out_of_bounds_in_helper::line_get)));
#ifdef __OPTIMIZE__
  CHECK(has(w, "(in a function called at " + at(out_of_bounds_in_helper::line_call) + ")"));
#endif
}

TEST_CASE("checked: a helper that is not inlined is named with its caller's line (the shadow call stack)",
          "[oracle][checked][hooks]") {
  const auto b = backend_for("cuda");
  const auto o = run(b, out_of_bounds_in_noinline_helper{}, 1, 1);  // out: 1 element
  REQUIRE(o.error);
  std::string w = what(o);
  INFO(w);
  CHECK(has(w, "index 1 is out of bounds at " + at(line_read_element) +
                   " for a ki::span<const long int> of 1 elements" + " (in a function called at " +
                   at(out_of_bounds_in_noinline_helper::line_call) + ")"));
  const auto r = run(b, race_in_noinline_helper{}, 1, 64);
  REQUIRE(r.error);
  w = what(r);
  INFO(w);
  CHECK(has(w, "read it at " + at(line_read_element) + " (in a function called at " +
                   at(race_in_noinline_helper::line_call) + ")"));
  CHECK(has(w, "wrote it at " + at(race_in_noinline_helper::line_write) + ", "));
}
