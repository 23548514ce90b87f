// The oracle's other duties (DESIGN.md, "The oracle"): unspecified memory is made visible with
// the poison word 0xFFBADBAD, `threads = 1` gives a deterministic run (groups in order on the
// calling thread), barriers are exact for the largest work-groups, and device functions refuse
// to run outside a kernel.
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/detail/cpu/sub_group_ops.hpp>
#include <ki/reference.hpp>

namespace {

// The cuda preset, whatever KI_REFERENCE_PROFILE says: these tests check exact messages,
// limits and the fixed poison word of that profile.
const ki::reference::profile cuda = ki::reference::profile::preset("cuda");

using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;

constexpr std::uint32_t poison = 0xFFBADBADu;

/// The poison's bytes in memory order (the word repeated, in the machine's byte order).
std::uint8_t poison_byte(std::size_t i) { return std::bit_cast<std::array<std::uint8_t, 4>>(poison)[i % 4]; }

/// Each work-item reads its slots of two fresh local arrays before writing them.
struct read_fresh_local {
  void operator()(ki::span<std::uint32_t> words, ki::span<std::uint8_t> bytes) const {
    auto w = ki::localmemory<std::uint32_t, 64>([] {});
    auto c = ki::localmemory<std::uint8_t, 6>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x, n = ki::get_local_size().x;
    words[g * n + l] = w[l];
    w[l] = 0;  // the next group must see poison again, not this
    if (l < 6) {
      bytes[g * 6 + l] = c[l];
      c[l] = 0;
    }
  }
};

// Observed through globals: which thread ran each group, and in which order.
std::array<std::thread::id, 64> group_thread;
std::array<int, 64> group_order;
std::atomic<int> next_order{0};

struct order_probe {
  void operator()() const {
    if (ki::get_local_id().x == 0) {
      const i64 g = ki::get_group_id().x;
      group_thread[static_cast<std::size_t>(g)] = std::this_thread::get_id();
      group_order[static_cast<std::size_t>(g)] = next_order++;
    }
  }
};

struct print_group {
  void operator()() const {
    const auto l = ki::get_local_id();
    if (l.x == 0 && l.y == 0) {
      const auto g = ki::get_group_id();
      ki::print("group (", g.x, ", ", g.y, ", ", g.z, ")");
    }
  }
};

/// 50 rounds of "read the right neighbour, barrier, write it + 1, barrier" (101 barriers):
/// item l ends with (l + 50) % n + 50.
struct rotate {
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 1024>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = l;
    ki::barrier();
    for (int k = 0; k < 50; ++k) {
      const i64 v = buf[(l + 1) % n];
      ki::barrier();
      buf[l] = v + 1;
      ki::barrier();
    }
    out[g * n + l] = buf[l];
  }
};

/// Hillis-Steele scan of 1..n over 1024 items (10 rounds, 21 barriers), then the total is
/// broadcast from the last item: out = (l + 1)(l + 2) / 2 and n (n + 1) / 2.
struct scan_and_broadcast {
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 1024>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = l + 1;
    ki::barrier();
    for (i64 off = 1; off < n; off *= 2) {
      const i64 v = l >= off ? buf[l - off] : 0;
      ki::barrier();
      buf[l] += v;
      ki::barrier();
    }
    out[2 * (g * n + l)] = buf[l];
    out[2 * (g * n + l) + 1] = buf[n - 1];
  }
};

}  // namespace

TEST_CASE("the sub-group operations' table: each row has the functions its shape uses", "[oracle]") {
  // (A static_assert where a compiler can evaluate it; not under -fsanitize=undefined.)
  CHECK(ki::detail::cpu::ops_detail::rows_have_their_functions());
}

TEST_CASE("fresh allocations are filled with the poison word", "[oracle][poison]") {
  const ki::reference::backend b{.device = cuda};
  const auto words = ki::to_host(b, ki::allocate<std::uint32_t>(b, 100));
  CHECK(words == std::vector<std::uint32_t>(100, poison));
  const auto longs = ki::to_host(b, ki::allocate<std::uint64_t>(b, {3, 4}));
  CHECK(longs == std::vector<std::uint64_t>(12, (std::uint64_t{poison} << 32) | poison));
  const auto bytes = ki::to_host(b, ki::allocate<std::uint8_t>(b, 7));
  for (std::size_t i = 0; i < bytes.size(); ++i) CHECK(bytes[i] == poison_byte(i));
  const auto floats = ki::to_host(b, ki::allocate<float>(b, 5));
  for (float f : floats) CHECK(std::bit_cast<std::uint32_t>(f) == poison);

  // Memory given back and allocated again is poisoned again, not what was there before.
  for (int round = 0; round < 3; ++round) {
    {
      auto z = ki::zeros<std::uint32_t>(b, 4096);
      CHECK(ki::to_host(b, z) == std::vector<std::uint32_t>(4096, 0));
    }
    CHECK(ki::to_host(b, ki::allocate<std::uint32_t>(b, 4096)) == std::vector<std::uint32_t>(4096, poison));
  }
}

TEST_CASE("fresh local memory is filled with the poison word, for every work-group", "[oracle][poison]") {
  for (int threads : {1, 0}) {
    INFO("threads = " << threads);
    const ki::reference::backend b{.device = cuda, .threads = threads};
    const i64 groups = 5, n = 64;
    auto words = ki::zeros<std::uint32_t>(b, groups * n);
    auto bytes = ki::zeros<std::uint8_t>(b, groups * 6);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, read_fresh_local{}, words, bytes);
    ki::synchronize(b);
    CHECK(ki::to_host(b, words) == std::vector<std::uint32_t>(static_cast<std::size_t>(groups * n), poison));
    const auto h = ki::to_host(b, bytes);
    for (std::size_t i = 0; i < h.size(); ++i) CHECK(h[i] == poison_byte(i % 6));
    // A second launch on the same threads: fresh again.
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, read_fresh_local{}, words, bytes);
    ki::synchronize(b);
    CHECK(ki::to_host(b, words) == std::vector<std::uint32_t>(static_cast<std::size_t>(groups * n), poison));
  }
}

/// Each work-item reads its slot of a local array before writing it, then writes a value that
/// names its group and itself: 1000 (g + 1) + l.
struct read_leftover_local {
  void operator()(ki::span<std::uint32_t> words) const {
    auto w = ki::localmemory<std::uint32_t, 64>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x, n = ki::get_local_size().x;
    words[g * n + l] = w[l];
    w[l] = static_cast<std::uint32_t>(1000 * (g + 1) + l);
  }
};

TEST_CASE("local_memory = leftovers: a work-group reads what the previous group on its thread left",
          "[oracle][poison]") {
  // Groups in order on one thread: group g (g > 0) reads group g - 1's values; group 0 of the
  // second launch reads the first launch's last group's. Fresh arena memory is still poisoned
  // (group 0 of the first launch: whatever this thread's earlier kernels left, or poison).
  const ki::reference::backend b{.device = cuda,
                                 .threads = 1,
                                 .queue = ki::reference::queue_mode::immediate,
                                 .local_memory = ki::reference::local_memory_start::leftovers};
  const i64 groups = 4, n = 64;
  auto words = ki::zeros<std::uint32_t>(b, groups * n);
  for (int round = 0; round < 2; ++round) {
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, read_leftover_local{}, words);
    ki::synchronize(b);
    const auto h = ki::to_host(b, words);
    for (i64 g = round == 0 ? 1 : 0; g < groups; ++g)
      for (i64 l = 0; l < n; ++l) {
        const i64 previous = g == 0 ? groups - 1 : g - 1;
        CHECK(h[static_cast<std::size_t>(g * n + l)] == 1000 * (previous + 1) + l);
      }
  }
  // The default (poison) on the same thread right after: poison again, not the leftovers.
  const ki::reference::backend p{.device = cuda, .threads = 1, .queue = ki::reference::queue_mode::immediate};
  ki::launch(p, {.numgroups = groups, .workgroupsize = n}, read_leftover_local{}, words);
  ki::synchronize(p);
  CHECK(ki::to_host(p, words) == std::vector<std::uint32_t>(static_cast<std::size_t>(groups * n), poison));
}

/// The KA form of read_leftover_local: a localmem read before it is written.
struct ka_read_leftover_local {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> words) const {
    auto w = g.template localmem<std::uint32_t, 64>([] {});
    g.items([&](auto i) {
      words[i.global_linear()] = w[i.local_linear()];
      w[i.local_linear()] = static_cast<std::uint32_t>(1000 * (g.group_linear() + 1) + i.local_linear());
    });
  }
};

TEST_CASE("local_memory = leftovers: a KA work-group's localmem holds the previous group's values",
          "[oracle][poison]") {
  const ki::reference::backend b{.device = cuda,
                                 .threads = 1,
                                 .queue = ki::reference::queue_mode::immediate,
                                 .local_memory = ki::reference::local_memory_start::leftovers};
  const i64 groups = 4, n = 64;
  auto words = ki::zeros<std::uint32_t>(b, groups * n);
  ki::ka::kernel(b, ka_read_leftover_local{}, ki::ka::groupsize<64>)({.ndrange = groups * n}, words);
  ki::synchronize(b);
  const auto h = ki::to_host(b, words);
  for (i64 g = 1; g < groups; ++g)
    for (i64 l = 0; l < n; ++l) CHECK(h[static_cast<std::size_t>(g * n + l)] == 1000 * g + l);
  const ki::reference::backend p{.device = cuda, .threads = 1, .queue = ki::reference::queue_mode::immediate};
  ki::ka::kernel(p, ka_read_leftover_local{}, ki::ka::groupsize<64>)({.ndrange = groups * n}, words);
  ki::synchronize(p);
  CHECK(ki::to_host(p, words) == std::vector<std::uint32_t>(static_cast<std::size_t>(groups * n), poison));
}

TEST_CASE("threads = 1 runs the groups in order on one thread; queue = immediate on the calling thread",
          "[oracle][threads]") {
  const bool immediate = GENERATE(false, true);
  const ki::reference::backend b{
      .device = cuda,
      .threads = 1,
      .queue = immediate ? ki::reference::queue_mode::immediate : ki::reference::queue_mode::async};
  for (int repeat = 0; repeat < 3; ++repeat) {
    next_order = 0;
    group_order.fill(-1);
    group_thread.fill(std::thread::id{});
    ki::launch(b, {.numgroups = 64, .workgroupsize = 8}, order_probe{});
    ki::synchronize(b);
    std::size_t out_of_order = 0, elsewhere = 0, on_caller = 0;
    for (std::size_t g = 0; g < 64; ++g) {
      if (group_order[g] != static_cast<int>(g)) ++out_of_order;
      if (group_thread[g] != group_thread[0]) ++elsewhere;
      if (group_thread[g] == std::this_thread::get_id()) ++on_caller;
    }
    CHECK(out_of_order == 0);
    CHECK(elsewhere == 0);
    if (immediate) CHECK(on_caller == 64u);  // async: the queue's worker, or synchronize helping
  }
}

TEST_CASE("threads = 1 prints in group order", "[oracle][threads]") {
  // The same observation through ki::print: with one thread the output is deterministic, one
  // line per group, in linear group order (x fastest). stdout is captured through fd 1.
  const ki::reference::backend b{.device = cuda, .threads = 1};
  std::fflush(stdout);
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  const int saved = ::dup(1);
  REQUIRE(::dup2(::fileno(tmp), 1) >= 0);
  ki::launch(b, {.numgroups = {4, 4, 4}, .workgroupsize = {2, 2, 1}}, print_group{});
  ki::synchronize(b);
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  std::string expected;
  for (int g = 0; g < 64; ++g)
    expected +=
        "group (" + std::to_string(g % 4) + ", " + std::to_string(g / 4 % 4) + ", " + std::to_string(g / 16) + ")\n";
  CHECK(out == expected);
}

TEST_CASE("a group of 1024 work-items crossing over 100 barriers gives exact results", "[oracle][barrier]") {
  for (int threads : {1, 0}) {
    INFO("threads = " << threads);
    const ki::reference::backend b{.device = cuda, .threads = threads};
    const i64 n = 1024, groups = 3;
    REQUIRE(ki::max_work_group_size(b) >= n);
    auto out = ki::zeros<i64>(b, groups * n);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, rotate{}, out);
    auto scanned = ki::zeros<i64>(b, 2 * groups * n);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, scan_and_broadcast{}, scanned);
    ki::synchronize(b);
    const auto h = ki::to_host(b, out);
    const auto s = ki::to_host(b, scanned);
    std::size_t bad = 0;
    for (i64 i = 0; i < groups * n; ++i) {
      const i64 l = i % n;
      if (h[static_cast<std::size_t>(i)] != (l + 50) % n + 50) ++bad;
      if (s[static_cast<std::size_t>(2 * i)] != (l + 1) * (l + 2) / 2) ++bad;
      if (s[static_cast<std::size_t>(2 * i + 1)] != n * (n + 1) / 2) ++bad;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("device functions called outside a kernel throw std::logic_error", "[oracle][outside]") {
  const auto names_it = [](const std::string& fn, auto&& call) {
    INFO(fn);
    try {
      call();
      FAIL_CHECK("nothing was thrown");
    } catch (const std::logic_error& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring(fn));
      CHECK_THAT(std::string(e.what()), ContainsSubstring("outside a kernel"));
    }
  };
  names_it("get_local_id", [] { (void)ki::get_local_id(); });
  names_it("get_group_id", [] { (void)ki::get_group_id<std::int32_t>(); });
  names_it("get_local_size", [] { (void)ki::get_local_size(); });
  names_it("get_num_groups", [] { (void)ki::get_num_groups(); });
  names_it("get_global_id", [] { (void)ki::get_global_id<std::uint8_t>(); });
  names_it("get_global_size", [] { (void)ki::get_global_size(); });
  names_it("get_sub_group_id", [] { (void)ki::get_sub_group_id(); });
  names_it("get_max_sub_group_size", [] { (void)ki::get_max_sub_group_size(); });
  names_it("barrier", [] { ki::barrier(); });
  names_it("localmemory", [] { (void)ki::localmemory<int, 4>([] {}); });
  // And inside a kernel they work again afterwards.
  const ki::reference::backend b{.device = cuda};
  auto out = ki::zeros<i64>(b, 4);
  struct ids {
    void operator()(ki::span<i64> o) const { o[ki::get_global_id().x] = ki::get_local_id().x; }
  };
  ki::launch(b, {.numgroups = 2, .workgroupsize = 2}, ids{}, out);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<i64>{0, 1, 0, 1});
}
