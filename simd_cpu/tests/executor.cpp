// simd_cpu's own tests: what the backend promises beyond the spec suite (which it passes whole,
// spec_tests/): errors kept for synchronize with the work-group, work-item and source line; the
// lowest failing group reported; the backend usable afterwards; the lazy item loop (items that
// block keep their own coordinates, items after them run on the shared loop); the vector
// collectives against the exact lane-order fold; both schedulers.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/simd_cpu.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <typeinfo>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using i64 = std::int64_t;
using B = ki::simd_cpu::backend;
using Catch::Matchers::ContainsSubstring;

struct throws_at {
  KI_DEVICE void operator()(ki::span<int> out, i64 bad_group, i64 bad_item) const {
    const auto g = ki::get_group_id().x, l = ki::get_local_id().x;
    if (g == bad_group && l == bad_item) throw std::runtime_error("boom");
    out[ki::get_global_id().x] = 1;
  }
};

struct out_of_bounds_after_barrier {
  static constexpr unsigned line = __LINE__ + 3;  // the access
  KI_DEVICE void operator()(ki::span<int> out) const {
    ki::barrier();
    out[ki::get_global_id().x + 1] = 1;  // the last item is one past the end
  }
};

/// Work-item 9 reads one past the end of local memory (`site`: its localmemory call).
struct local_out_of_bounds {
  static constexpr unsigned site = __LINE__ + 3;
  static constexpr unsigned line = __LINE__ + 5;
  KI_DEVICE void operator()(ki::span<int> out) const {
    auto buf = ki::localmemory<short, 32>([] {});
    const i64 l = ki::get_local_id().x;
    buf[l] = 1;
    out[l] = buf[l == 9 ? 32 : l];
  }
};

struct early_exit {
  KI_DEVICE void operator()(ki::span<int> out) const {
    if (ki::get_local_id().x < 3) return;
    ki::barrier();
    out[ki::get_global_id().x] = 1;
  }
};

struct two_barriers {
  KI_DEVICE void operator()(ki::span<int> out) const {
    if (ki::get_local_id().x % 2 == 0) ki::barrier();
    else ki::barrier();
    out[ki::get_global_id().x] = 1;
  }
};

i64 depth(i64 n) {
  volatile char pad[4096];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : depth(n - 1) + pad[0];
}
struct deep_recursion {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    ki::barrier();                             // on a fiber of its own from here on
    out[ki::get_global_id().x] = depth(1000);  // ~4 MB of stack
  }
};

struct too_much_local {
  KI_DEVICE void operator()(ki::span<int> out) const {
    auto a = ki::localmemory<char, 40 * 1024>([] {});
    auto b = ki::localmemory<char, 40 * 1024>([] {});
    a[0] = 1;
    b[0] = 1;
    out[0] = a[0] + b[0];
  }
};

/// Records each item's coordinates before and after two barriers and a sub-group reduction:
/// items that blocked must still see their own.
struct coordinates {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const auto n = ki::get_local_size();
    const auto l = ki::get_local_id();
    const i64 lin = l.x + n.x * (l.y + n.y * l.z);
    const i64 slot = 4 * (ki::get_group_id().x * n.x * n.y * n.z + lin);
    out[slot] = lin;
    ki::barrier();
    const auto l2 = ki::get_local_id();
    out[slot + 1] = l2.x + n.x * (l2.y + n.y * l2.z);
    out[slot + 2] = ki::sub_group_reduce(std::plus<i64>(), i64{1});
    ki::barrier();
    out[slot + 3] = ki::get_sub_group_id() * ki::get_max_sub_group_size() + ki::get_sub_group_local_id();
  }
};

/// Everything a work-item can ask about where it is, in 10 slots; sub-groups `sync_sg` (and
/// only those: independent sub-groups) pass a sub-group function first, so that their items
/// are suspended and the item loop goes on past them (on other fibers) and back.
struct where_am_i {
  KI_DEVICE void operator()(ki::span<i64> out, i64 sync_sg) const {
    if (sync_sg >= 0 && ki::get_sub_group_id() % 3 == sync_sg) (void)ki::sub_group_any(true);
    const auto n = ki::get_local_size();
    const auto l = ki::get_local_id();
    const auto g = ki::get_global_id();
    const i64 lin = l.x + n.x * (l.y + n.y * l.z);
    const i64 slot = 10 * (ki::get_group_id().x * n.x * n.y * n.z + lin);
    const i64 v[10] = {
        l.x, l.y, l.z, g.x, g.y, g.z, ki::get_sub_group_id(), ki::get_sub_group_local_id(), ki::get_sub_group_size(),
        lin};
    for (int k = 0; k < 10; ++k) out[slot + k] = v[k];
  }
};

/// Local-memory atomics: whether the element is the running thread's private memory (the plain
/// path), and results that must equal the atomic ones exactly.
struct local_atomics {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<std::int32_t> global) const {
    auto counter = ki::localmemory<std::int32_t, 1>([] {});
    auto cell = ki::localmemory<float, 1>([] {});
    const auto t = ki::get_local_id().x;
    if (t == 0) counter[0] = 2147483647 - 100, cell[0] = 0.0f;
    ki::barrier();
    ki::atomic_fetch_add(&counter[0], std::int32_t{1});  // wraps past INT32_MAX, as atomics do
    ki::barrier();
    if (t == 0) {
      const auto g = ki::get_group_id().x;
      float expected = -0.0f;  // equal to 0.0f, but not the same object representation
      const bool swapped = ki::atomic_compare_exchange(&cell[0], expected, 1.0f);
      out[4 * g] = ki::detail::cpu::group_private(&counter[0]);
      out[4 * g + 1] = ki::detail::cpu::group_private(&global[0]);
      out[4 * g + 2] = counter[0];
      out[4 * g + 3] = (swapped ? 1 : 0) + (expected == 0.0f && !std::signbit(expected) ? 10 : 0);
    }
  }
};

template <class T, class Op>
struct reduce_scan {
  KI_DEVICE void operator()(ki::span<T> out, ki::span<const T> in) const {
    const auto i = ki::get_global_id().x;
    const T v = in[i];
    out[3 * i] = ki::sub_group_reduce(Op{}, v);
    out[3 * i + 1] = ki::sub_group_scan(Op{}, v);
    out[3 * i + 2] = ki::sub_group_exclusive_scan(Op{}, v, T(7));
  }
};

template <class T, class Op>
void check_collectives(const B& b, i64 items) {
  const i64 w = ki::sub_group_size(b), n = 3 * items;
  std::vector<T> in(static_cast<std::size_t>(n));
  // Floating point: 1 and 2 only, so that products and sums are exact in any grouping (the
  // vector fold may regroup them, which the spec allows; exact values make that invisible).
  for (i64 i = 0; i < n; ++i)
    in[static_cast<std::size_t>(i)] = std::is_floating_point_v<T> ? static_cast<T>(1 + (i * 37 + 11) % 5 / 4)
                                                                  : static_cast<T>((i * 37 + 11) % 13 + 1);
  const auto din = ki::to_device(b, in);
  auto out = ki::allocate<T>(b, 3 * n);
  ki::launch(b, {.numgroups = 3, .workgroupsize = items}, reduce_scan<T, Op>{}, out, din);
  const auto got = ki::to_host(b, out);
  const Op op{};
  i64 bad = 0;
  for (i64 g = 0; g < 3; ++g)
    for (i64 s = 0; s * w < items; ++s) {
      const i64 first = g * items + s * w, size = std::min(w, items - s * w);
      T r = in[static_cast<std::size_t>(first)];
      for (i64 k = 1; k < size; ++k) r = op(r, in[static_cast<std::size_t>(first + k)]);
      T scan = T(0), excl = T(7);
      for (i64 k = 0; k < size; ++k) {
        const i64 i = first + k;
        const T v = in[static_cast<std::size_t>(i)];
        scan = k == 0 ? v : op(scan, v);
        bad += got[static_cast<std::size_t>(3 * i)] != r;
        bad += got[static_cast<std::size_t>(3 * i + 1)] != scan;
        bad += got[static_cast<std::size_t>(3 * i + 2)] != excl;
        excl = op(excl, v);
      }
    }
  INFO("W = " << w << ", " << items << " items per group, " << typeid(T).name() << ", " << typeid(Op).name());
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("simd_cpu: an exception in a work-item surfaces at synchronize, naming the group and item", "[simd_cpu]") {
  for (int threads : {1, 2}) {
    const B b{.threads = threads};
    auto out = ki::zeros<int>(b, 64 * 8);
    ki::launch(b, {.numgroups = 8, .workgroupsize = 64}, throws_at{}, out, i64{5}, i64{17});
    try {
      ki::synchronize(b);
      FAIL("no error");
    } catch (const ki::kernel_error& e) {
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.group() == ki::xyz<i64>{5, 0, 0});
      CHECK(e.local() == ki::xyz<i64>{17, 0, 0});
      CHECK_THAT(std::string(e.what()), ContainsSubstring("boom") && ContainsSubstring("(17, 0, 0)"));
    }
    ki::synchronize(b);  // reported once
    // Groups below the failing one ran.
    const auto h = ki::to_host(b, out);
    for (i64 i = 0; i < 5 * 64; ++i) CHECK(h[static_cast<std::size_t>(i)] == 1);
  }
}

TEST_CASE("simd_cpu: the lowest failing group is reported", "[simd_cpu]") {
  const B b{.threads = 4};
  struct fail_from {
    KI_DEVICE void operator()(ki::span<int>, i64 from) const {
      if (ki::get_group_id().x >= from && ki::get_local_id().x == 3) throw std::runtime_error("late");
    }
  };
  auto out = ki::zeros<int>(b, 1);
  ki::launch(b, {.numgroups = 1000, .workgroupsize = 32}, fail_from{}, out, i64{100});
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.group().x == 100);
  }
}

TEST_CASE("simd_cpu: out-of-bounds access after a barrier names the item and the barrier", "[simd_cpu]") {
  const B b{.threads = 1};
  auto out = ki::zeros<int>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, out_of_bounds_after_barrier{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.local() == ki::xyz<i64>{63, 0, 0});
    CHECK_THAT(std::string(e.what()), ContainsSubstring("out of bounds") && ContainsSubstring("after barrier"));
    // The line of the access itself (a Release build without debug information).
    const std::string at = "executor.cpp:" + std::to_string(out_of_bounds_after_barrier::line);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index 64 is out of bounds at " + at + " for a ki::span<int> of 64 elements"));
    CHECK(e.where().rfind(at, 0) == 0);
  }
}

TEST_CASE("simd_cpu: an out-of-bounds local memory access names its line and the allocation", "[simd_cpu]") {
  const B b{.threads = 1};
  auto out = ki::zeros<int>(b, 32);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, local_out_of_bounds{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.local() == ki::xyz<i64>{9, 0, 0});
    const std::string at = "executor.cpp:" + std::to_string(local_out_of_bounds::line);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index 32 is out of bounds at " + at + " for local memory allocated at executor.cpp:" +
                                 std::to_string(local_out_of_bounds::site) + " (32 elements of short int)"));
    CHECK(e.where().rfind(at, 0) == 0);
  }
}

TEST_CASE("simd_cpu: an error names the last sync point its work-item passed in its own group", "[simd_cpu]") {
  // Group 0 passes a barrier and a sub-group reduction, in either order; group 1 neither. The
  // groups run one after another on one thread, so group 1's work-items follow group 0's.
  struct sync_then_throw {
    KI_DEVICE void operator()(ki::span<i64> out, bool reduce_last, i64 bad_group) const {
      const i64 g = ki::get_group_id().x, l = ki::get_local_id().x;
      if (g == 0) {
        const auto bar = [] { ki::barrier(); };
        const auto red = [&] { out[l] = ki::sub_group_reduce(std::plus<>{}, l); };
        if (reduce_last) bar(), red();
        else red(), bar();
      }
      if (g == bad_group && l == 1) throw std::runtime_error("boom");
    }
  };
  const B b{.threads = 1};
  const auto error_of = [&](bool reduce_last, i64 bad_group) -> std::string {
    auto out = ki::zeros<i64>(b, 2 * 8);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, sync_then_throw{}, out, reduce_last, bad_group);
    try {
      ki::synchronize(b);
    } catch (const ki::kernel_error& e) {
      CHECK(e.group().x == bad_group);
      CHECK(e.local().x == 1);
      return e.what();
    }
    FAIL("no error");
    return "";
  };
  CHECK_THAT(error_of(true, 0), ContainsSubstring("(after sub_group_reduce executor.cpp:"));
  CHECK_THAT(error_of(false, 0), ContainsSubstring("(after barrier executor.cpp:"));
  CHECK_THAT(error_of(false, 1), !ContainsSubstring("(after"));
}

TEST_CASE("simd_cpu: divergent barriers are reported, not a hang", "[simd_cpu]") {
  const B b{.threads = 1};
  auto out = ki::zeros<int>(b, 64);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, early_exit{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::cannot_finish);
    CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
    CHECK_THAT(std::string(e.what()), ContainsSubstring("items 3-31 wait at barrier executor.cpp:") &&
                                          ContainsSubstring("; items 0-2 exited"));
  }
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, two_barriers{}, out);
  CHECK_THROWS_AS(ki::synchronize(b), ki::kernel_error);
  // Still usable.
  ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, throws_at{}, out, i64{-1}, i64{-1});
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<int>(64, 1));
}

TEST_CASE("simd_cpu: a fiber stack overflow is reported with the stack size", "[simd_cpu]") {
#if defined(__SANITIZE_ADDRESS__)
  SKIP("AddressSanitizer cannot follow the recovery from a stack overflow");
#endif
  const B b{.threads = 1, .stack_size = 256 * 1024};
  auto out = ki::zeros<i64>(b, 4);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 4}, deep_recursion{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::stack_overflow);
    CHECK_THAT(std::string(e.what()), ContainsSubstring("stack_size"));
  }
}

TEST_CASE("simd_cpu: a stack overflow on the way into a barrier is the arriving work-item's", "[simd_cpu]") {
#if defined(__SANITIZE_ADDRESS__)
  SKIP("AddressSanitizer cannot follow the recovery from a stack overflow");
#endif
  // Work-item 5 reaches the second barrier with `depth` bytes more on its stack; swept, the
  // overflow falls on every step into the switch, which runs after the executor has marked the
  // next work-item current: the error must still name work-item 5.
  struct deeper_at_barrier {
    KI_DEVICE void operator()(ki::span<int> out, i64 depth) const {
      ki::barrier();
      const i64 l = ki::get_local_id().x;
      const auto n = static_cast<std::size_t>(l == 5 ? depth : 16);
      volatile char* p = static_cast<volatile char*>(__builtin_alloca(n));
      p[n - 1] = 1;
      p[0] = 1;
      ki::barrier();
      out[l] = p[0];
    }
  };
  const B b{.threads = 1, .stack_size = 64 * 1024};
  auto out = ki::zeros<int>(b, 8);
  int overflows = 0, fits = 0;
  for (i64 depth = 60 * 1024; depth <= 132 * 1024; depth += 32) {  // (stack colouring adds up to 64 KiB)
    ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, deeper_at_barrier{}, out, depth);
    try {
      ki::synchronize(b);
      ++fits;
    } catch (const ki::kernel_error& e) {
      ++overflows;
      INFO("depth " << depth << ": " << e.what());
      REQUIRE(e.error_kind() == ki::kernel_error::kind::stack_overflow);
      REQUIRE(e.local() == ki::xyz<i64>{5, 0, 0});
    }
  }
  CHECK(fits > 0);  // the sweep crossed the end of the stack
  CHECK(overflows > 0);
}

TEST_CASE("simd_cpu: local memory beyond the limit is an error naming the sizes", "[simd_cpu]") {
  const B b{.threads = 1};
  auto out = ki::zeros<int>(b, 1);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 1}, too_much_local{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::resource);
    CHECK_THAT(std::string(e.what()), ContainsSubstring("40960") && ContainsSubstring("max_local_memory"));
  }
}

TEST_CASE("simd_cpu: work-items keep their coordinates across barriers and collectives", "[simd_cpu]") {
  for (const char* sched : {"tbb", "openmp"}) {
    for (i64 w : {1, 8, 32}) {
      B b{.threads = 2, .sub_group_width = w};
      b.scheduler = std::string(sched) == "openmp" ? ki::simd_cpu::scheduler::openmp : ki::simd_cpu::scheduler::tbb;
      for (const ki::dims& shape : {ki::dims(100), ki::dims(7, 5, 3), ki::dims(64, 4)}) {
        const i64 items = shape[0] * shape[1] * shape[2];
        auto out = ki::allocate<i64>(b, 4 * 5 * items);
        ki::launch(b, {.numgroups = 5, .workgroupsize = shape}, coordinates{}, out);
        const auto h = ki::to_host(b, out);
        i64 bad = 0;
        for (i64 g = 0; g < 5; ++g)
          for (i64 lin = 0; lin < items; ++lin) {
            const i64 s = 4 * (g * items + lin);
            const i64 size = std::min(w, items - lin / w * w);
            bad += h[static_cast<std::size_t>(s)] != lin || h[static_cast<std::size_t>(s + 1)] != lin ||
                   h[static_cast<std::size_t>(s + 2)] != size || h[static_cast<std::size_t>(s + 3)] != lin;
          }
        INFO(sched << ", W = " << w << ", " << items << " items");
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("simd_cpu: the item loop gives every work-item its coordinates, with and without sync points", "[simd_cpu]") {
  // The shapes cross rows (x wraps), planes and sub-group boundaries at every place the item
  // loop's step handles (a sub-group ending mid-row, the last sub-group partial).
  for (i64 w : {1, 4, 32}) {
    const B b{.threads = 2, .sub_group_width = w};
    for (const ki::dims& shape : {ki::dims(100), ki::dims(7, 5, 3), ki::dims(64, 4), ki::dims(1, 9, 2)}) {
      const i64 items = shape[0] * shape[1] * shape[2], groups = 6;
      for (i64 sync_sg : {-1, 0, 2}) {
        auto out = ki::allocate<i64>(b, 10 * groups * items);
        ki::launch(b, {.numgroups = ki::dims(groups), .workgroupsize = shape}, where_am_i{}, out, sync_sg);
        const auto h = ki::to_host(b, out);
        i64 bad = 0;
        for (i64 g = 0; g < groups; ++g)
          for (i64 z = 0, lin = 0; z < shape[2]; ++z)
            for (i64 y = 0; y < shape[1]; ++y)
              for (i64 x = 0; x < shape[0]; ++x, ++lin) {
                const i64 expect[10] = {
                    x, y, z, g * shape[0] + x, y, z, lin / w, lin % w, std::min(w, items - lin / w * w), lin};
                for (int k = 0; k < 10; ++k)
                  bad += h[static_cast<std::size_t>(10 * (g * items + lin) + k)] != expect[k];
              }
        INFO("W = " << w << ", shape " << shape[0] << "x" << shape[1] << "x" << shape[2] << ", sync_sg " << sync_sg);
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("simd_cpu: local-memory atomics are plain operations with the atomic results", "[simd_cpu]") {
  for (int threads : {1, 2}) {
    const B b{.threads = threads};
    const i64 groups = 8, items = 101;
    auto out = ki::zeros<i64>(b, 4 * groups);
    auto global = ki::zeros<std::int32_t>(b, 1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = items}, local_atomics{}, out, global);
    const auto h = ki::to_host(b, out);
    for (i64 g = 0; g < groups; ++g) {
      INFO("group " << g << ", threads " << threads);
      CHECK(h[static_cast<std::size_t>(4 * g)] == 1);      // local memory: the plain path
      CHECK(h[static_cast<std::size_t>(4 * g + 1)] == 0);  // global memory: real atomics
      CHECK(h[static_cast<std::size_t>(4 * g + 2)] == std::int32_t(2147483647 - 100 + items - 0x100000000LL));
      CHECK(h[static_cast<std::size_t>(4 * g + 3)] == 10);  // not swapped; expected now holds +0.0
    }
  }
  // Outside a kernel nothing is private.
  int x = 0;
  CHECK_FALSE(ki::detail::cpu::group_private(&x));
}

TEST_CASE("simd_cpu: vector collectives equal the lane-order fold", "[simd_cpu]") {
  for (i64 w : {4, 8, 32, 64}) {
    const B b{.sub_group_width = w};
    for (i64 items : {w, 3 * w + 5, i64{100}}) {
      check_collectives<std::int32_t, std::plus<std::int32_t>>(b, items);
      check_collectives<std::int64_t, std::plus<>>(b, items);
      check_collectives<std::uint32_t, std::bit_xor<std::uint32_t>>(b, items);
      check_collectives<std::uint64_t, std::multiplies<std::uint64_t>>(b, items);
      check_collectives<std::int32_t, std::bit_or<>>(b, items);
      check_collectives<double, std::plus<double>>(b, items);  // small integers: exact in any order
      check_collectives<float, std::multiplies<float>>(b, items);
    }
  }
}

TEST_CASE("simd_cpu: host side", "[simd_cpu]") {
  const B b{};
  CHECK(ki::ndevices(b) == 1);
  CHECK(ki::device(b) == 0);
  CHECK(ki::functional(b) == std::optional<bool>(true));
  CHECK(ki::multiprocessor_count(b) >= 1);
  CHECK(ki::supports_linear_subgroups(b));
  auto a = ki::zeros<int>(b, 10);
  const auto e = ki::record_event(b);
  ki::wait_event(b, e);
  ki::set_priority(b, ki::priority::high);
  CHECK_THROWS_AS(ki::launch(B{.sub_group_width = 3}, {.ndrange = 4}, throws_at{}, a, i64{-1}, i64{-1}),
                  std::invalid_argument);
  CHECK_THROWS_AS(ki::launch(B{.sub_group_width = 128}, {.ndrange = 4}, throws_at{}, a, i64{-1}, i64{-1}),
                  std::invalid_argument);
}

TEST_CASE("simd_cpu: copies of any size, split over the backend's threads, copy every byte once", "[simd_cpu]") {
  // Large copies run as one part per thread (4 KiB multiples, the last part shorter); small ones
  // as one memmove. Sizes around both edges, odd ones included, each way and between arrays, on
  // one thread, two, all cores, and with OpenMP running the parts.
  std::vector<B> backends{B{.threads = 1}, B{.threads = 2}, B{}, B{.threads = 3}};
  backends.push_back(B{.threads = 2});
  backends.back().scheduler = ki::simd_cpu::scheduler::openmp;
  for (const i64 n : {i64{0}, i64{1}, i64{1000}, (i64{4} << 20) - 1, i64{4} << 20, (i64{9} << 20) + 12345}) {
    std::vector<unsigned char> host(static_cast<std::size_t>(n)), back(static_cast<std::size_t>(n), 0);
    for (i64 i = 0; i < n; ++i)
      host[static_cast<std::size_t>(i)] = static_cast<unsigned char>((i * 131 + i / 4096) % 251);
    for (const B& b : backends) {
      INFO("bytes " << n << ", threads " << b.threads);
      auto dev = ki::zeros<unsigned char>(b, n);
      ki::copyto(b, dev, host);
      auto dev2 = ki::zeros<unsigned char>(b, n);
      ki::copyto(b, dev2, dev);
      std::fill(back.begin(), back.end(), 0);
      ki::copyto(b, back, dev2);
      CHECK(back == host);
    }
  }
}
