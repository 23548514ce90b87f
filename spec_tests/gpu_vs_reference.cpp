// Differential tests of the GPU backends (compiled only into ki_spec_tests_cuda / _hip): every
// kernel runs on the GPU and on the reference backend emulating that GPU
// (config<B>::reference_of: its sub-group width, limits and promises) with the same inputs, and
// the two results must be identical, element for element. The kernels only produce values the
// spec defines: a result that may come from a lane without a work-item is replaced by 0 on both
// backends, using the lane and sub-group size each work-item observes, so any difference is a
// bug of one backend. The closed-form checks of the numbered files run on the GPU as well;
// these add the oracle as the second opinion (DESIGN.md: two oracles per check).
//
// Covered: index queries over 1-D to 3-D launches; barrier with local memory; the sub-group
// queries; shfl / shfl_down / shfl_up / shfl_xor with and without a width; ballot, any, all;
// reduce, scan and exclusive scan with a non-commutative operator (affine maps under
// composition) and with integer sums, with and without a width; a 16-byte struct with padding
// shuffled as words; sub_group_barrier ordering local memory; atomics on global and local memory;
// KA kernels (ki/ka.hpp) over 1-D to 3-D ndranges with offsets and partial groups: indices,
// @private, @groupreduce and @groupscan (non-commutative), ranged and unchecked phases, local
// memory across @synchronize, local atomics, grid_stride.
#include <cstdint>
#include <functional>

#include <ki/ka.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backends.hpp"

#if KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP

namespace ki_spec_gpu_vs_reference {

using i64 = std::int64_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

KI_DEVICE inline u32 hash(u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<u32>(x ^ (x >> 31));
}

/// The work-item's linear local id, work-group size and slot (group * n + lin).
struct where_t {
  i64 lin, n, slot;
};
KI_DEVICE inline where_t where_am_i() {
  const auto l = ki::get_local_id(), s = ki::get_local_size(), g = ki::get_group_id(), ng = ki::get_num_groups();
  const i64 n = s.x * s.y * s.z, lin = l.x + s.x * (l.y + s.y * l.z);
  return {lin, n, (g.x + ng.x * (g.y + ng.y * g.z)) * n + lin};
}

// --- indices, barrier, local memory, atomics -------------------------------------------------

constexpr i64 index_fields = 16;
struct indices_and_memory {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<u32> histogram) const {
    const auto w = where_am_i();
    i64* o = &out[w.slot * index_fields];
    const auto gid = ki::get_global_id(), lid = ki::get_local_id(), grp = ki::get_group_id();
    const auto gs = ki::get_global_size(), ls = ki::get_local_size(), ng = ki::get_num_groups();
    o[0] = gid.x, o[1] = gid.y, o[2] = gid.z, o[3] = lid.x, o[4] = lid.y, o[5] = lid.z;
    o[6] = grp.x, o[7] = grp.y, o[8] = grp.z, o[9] = gs.x * 1000000 + gs.y * 1000 + gs.z;
    o[10] = ls.x * 1000000 + ls.y * 1000 + ls.z, o[11] = ng.x * 1000000 + ng.y * 1000 + ng.z;
    // Reverse the work-group through local memory (barrier makes the writes visible).
    auto buf = ki::localmemory<i64, 512>([] {});
    auto bins = ki::localmemory<u32, 8>([] {});
    if (w.lin < 8) bins[w.lin] = 0;
    buf[w.lin] = hash(static_cast<u64>(w.slot));
    ki::barrier();
    o[12] = buf[w.n - 1 - w.lin];
    ki::atomic_fetch_add(&bins[hash(static_cast<u64>(w.slot) + 7) % 8], 1u);
    ki::atomic_fetch_add(&histogram[hash(static_cast<u64>(w.slot) + 3) % 16], 1u);
    ki::barrier();
    o[13] = w.lin < 8 ? bins[w.lin] : 0;
    ki::atomic_fetch_max(&histogram[16], static_cast<u32>(w.slot));
    o[14] = w.n;
    o[15] = ki::get_sub_group_id() * 1000 + ki::get_sub_group_local_id();
  }
};

// --- sub-groups ------------------------------------------------------------------------------

/// x -> a * x + b (mod 2^32); composition in lane order is associative, not commutative.
struct affine {
  u32 a, b;
};
struct compose {
  KI_DEVICE affine operator()(affine f, affine g) const { return {g.a * f.a, g.a * f.b + g.b}; }
};
struct plus64 {
  KI_DEVICE i64 operator()(i64 x, i64 y) const { return x + y; }
};
/// 16 bytes with padding: moved as four words.
struct padded {
  std::uint16_t x;
  std::uint8_t y;
  u32 z;
  double w;
};
KI_DEVICE inline u64 pack(affine f) { return (static_cast<u64>(f.a) << 32) | f.b; }

constexpr i64 sub_group_fields = 24;
struct sub_groups {
  KI_DEVICE void operator()(ki::span<u64> out, int width) const {
    const auto w = where_am_i();
    u64* o = &out[w.slot * sub_group_fields];
    const i64 lane = ki::get_sub_group_local_id(), size = ki::get_sub_group_size();
    const i64 base = lane / width * width, pos = lane - base;
    const i64 seg = size - base < width ? size - base : width;  // work-items in the caller's segment
    const u32 v = hash(static_cast<u64>(w.slot) * 31 + static_cast<u64>(width));
    o[0] = static_cast<u64>(ki::get_sub_group_id());
    o[1] = static_cast<u64>(lane);
    o[2] = static_cast<u64>(size);
    o[3] = static_cast<u64>(ki::get_num_sub_groups());
    o[4] = ki::shfl(v, (lane + 1) % size);  // always a lane with a work-item
    const u32 down = ki::shfl_down(v, 1);
    o[5] = lane + 1 < size || lane + 1 >= ki::get_max_sub_group_size() ? down : 0;
    o[6] = ki::shfl_up(v, 3);  // a lower lane, or its own value
    const u32 x = ki::shfl_xor(v, 1 % ki::get_max_sub_group_size());
    o[7] = (lane ^ (1 % ki::get_max_sub_group_size())) < size ? x : 0;
    const u32 sw = ki::shfl(v, lane + 5, width);
    o[8] = base + (lane + 5) % width < size ? sw : 0;
    const u32 dw = ki::shfl_down(v, 2, width);
    o[9] = pos + 2 >= width || lane + 2 < size ? dw : 0;
    o[10] = ki::shfl_up(v, 1, width);
    const u32 xw = ki::shfl_xor(v, width - 1, width);
    o[11] = base + (pos ^ (width - 1)) < size ? xw : 0;
    o[12] = ki::sub_group_ballot(v % 3 == 0);
    o[13] = ki::sub_group_ballot(v % 5 < 2, width);
    o[14] = ki::sub_group_any(v % 17 == 0) + 2 * ki::sub_group_all(v % 2 == 0 || lane == 0) +
            4 * ki::sub_group_any(v % 4 == 0, width) + 8 * ki::sub_group_all(v % 8 != 0, width);
    const affine f{v | 1u, v >> 7};
    o[15] = pack(ki::sub_group_reduce(compose{}, f));
    o[16] = pack(ki::sub_group_reduce(compose{}, f, width));
    o[17] = pack(ki::sub_group_scan(compose{}, f));
    o[18] = pack(ki::sub_group_scan(compose{}, f, width));
    o[19] = pack(ki::sub_group_exclusive_scan(compose{}, f, affine{3, 5}));
    o[20] = pack(ki::sub_group_exclusive_scan(compose{}, f, affine{7, 1}, width));
    o[21] = static_cast<u64>(ki::sub_group_reduce(plus64{}, static_cast<i64>(v), width) +
                             ki::sub_group_scan(plus64{}, static_cast<i64>(v)));
    const padded p{static_cast<std::uint16_t>(v), static_cast<std::uint8_t>(v >> 16), v * 3u,
                   static_cast<double>(v) / 8};
    const padded q = ki::shfl(p, (lane + 2) % size);
    o[22] = q.x + (static_cast<u64>(q.y) << 16) + (static_cast<u64>(q.z) << 24) + static_cast<u64>(q.w * 8) * 7;
    // sub_group_barrier orders local memory within the sub-group (the linear layout: the
    // work-item at lane ^ 1 is linear id lin ^ 1).
    auto buf = ki::localmemory<u32, 1024>([] {});
    buf[w.lin] = v;
    ki::sub_group_barrier();
    o[23] = (lane ^ 1) < size ? buf[w.lin ^ 1] : 0;
    (void)seg;
  }
};

struct shape {
  std::array<i64, 3> e;
  int rank;
  i64 groups;
};

std::vector<shape> shapes(i64 W) {
  return {{{1, 1, 1}, 1, 2},   {{W - 1 > 0 ? W - 1 : 1, 1, 1}, 1, 3},
          {{W, 1, 1}, 1, 2},   {{W + 1, 1, 1}, 1, 2},
          {{100, 1, 1}, 1, 3}, {{256, 1, 1}, 1, 2},
          {{7, 5, 1}, 2, 2},   {{W, 3, 1}, 2, 2},
          {{4, 4, 3}, 3, 2},   {{W + 2, 2, 2}, 3, 1}};
}

template <class T>
void compare(const std::vector<T>& gpu, const std::vector<T>& ref, i64 fields, const std::string& what) {
  REQUIRE(gpu.size() == ref.size());
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < gpu.size(); ++i)
    if (gpu[i] != ref[i]) {
      if (bad++ < 6)
        first << "\n  slot " << static_cast<i64>(i) / fields << " field " << static_cast<i64>(i) % fields << ": gpu "
              << gpu[i] << ", reference " << ref[i];
    }
  KI_INFO(what << ": " << bad << " of " << gpu.size() << " values differ" << first.str());
  CHECK(bad == 0);
}

template <class B, class F, class T, class... A>
std::vector<T> run(const B& b, const shape& s, i64 fields, F f, A&... extra) {
  const i64 total = s.e[0] * s.e[1] * s.e[2] * s.groups;
  auto out = ki_test::filled<T>(b, total * fields, T{});
  ki::launch(b, {.numgroups = s.groups, .workgroupsize = ki_test::dims_of(s.e, s.rank)}, f, out, extra...);
  return ki_test::read(b, out);
}

// --- the KA layer ----------------------------------------------------------------------------

// A KA kernel's operator() is a __host__ __device__ template, and so are its lambdas; run on
// the reference backend too, their instances for the CPU group call its host functions, which
// nvcc warns about (#20011, #20014) when it compiles those instances for the device, where they
// never run (docs/ka-layer.md).
#if defined(__NVCC__)
#pragma nv_diag_suppress 20011, 20014
#endif

/// Per work-item (partial groups too): its indices, @private across @synchronize, a reduce and
/// an inclusive and exclusive scan of affine maps (padding items: the neutral element), and a
/// ranged phase.
constexpr i64 ka_fields = 10;
struct ka_items {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<u64> out) const {
    auto p = g.template private_<u64, 2>();
    const auto val = [&](auto i) { return affine{hash(static_cast<u64>(i.global_linear())) | 1u, 3u}; };
    g.items([&](auto i) {
      p[i][0] = hash(static_cast<u64>(i.global_linear()) + 11);
      p[i][1] = static_cast<u64>(i.local_linear());
    });
    g.synchronize();
    const u64 sum = g.reduce(std::plus<>{}, u64{0}, [&](auto i) { return p(i) % 1000; });
    const auto in = g.scan(compose{}, affine{1, 0}, val);
    const auto ex = g.scan(compose{}, affine{1, 0}, val, {.inclusive = false});
    g.items([&](auto i) {
      u64* o = &out[ka_fields * i.global_linear()];
      const auto c = i.global();
      o[0] = static_cast<u64>(c.x + 100) + (static_cast<u64>(c.y + 100) << 16) + (static_cast<u64>(c.z + 100) << 32);
      o[1] = static_cast<u64>(i.local_linear()) + (static_cast<u64>(i.group_linear()) << 32);
      o[2] = p[i][0] + (p[i][1] << 40);
      o[3] = sum;
      o[4] = pack(in(i));
      o[5] = pack(ex(i));
      o[6] = 0;
    });
    g.synchronize();
    g.items(3, [&](auto i) { out[ka_fields * i.global_linear() + 6] = 1 + static_cast<u64>(i.local_linear()); });
    g.items(ki::ka::unchecked, [&](auto i) {
      out[ka_fields * i.global_linear() + 7] = static_cast<u64>(g.groupsize_linear());
      const auto e = g.ndrange_extents();
      out[ka_fields * i.global_linear() + 8] = static_cast<u64>(e.x + 1000 * e.y + 1000000 * e.z);
      out[ka_fields * i.global_linear() + 9] = static_cast<u64>(g.group_linear());
    });
  }
};

/// Whole 1-D groups of 64: local memory reversed across @synchronize, local atomics into 8 bins,
/// an unchecked ranged phase, and a grid-stride loop of global atomics.
constexpr i64 ka_memory_fields = 3;
struct ka_memory {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<u64> out, ki::span<u32> hist, i64 n) const {
    auto buf = g.template localmem<u64, 64>([] {});
    auto bins = g.template localmem<u32, 8>([] {});
    g.items(8, [&](auto i) { bins[i.local_linear()] = 0; });
    g.items([&](auto i) { buf[i.local_linear()] = hash(static_cast<u64>(i.global_linear()) * 5); });
    g.synchronize();
    g.items([&](auto i) {
      out[ka_memory_fields * i.global_linear()] = buf[63 - i.local_linear()];
      bins.atomic_fetch_add(buf[i.local_linear()] % 8, 1u);
    });
    g.synchronize();
    g.items(ki::ka::unchecked, 8,
            [&](auto i) { out[ka_memory_fields * i.global_linear() + 1] = bins[i.local_linear()]; });
    g.items(ki::ka::unchecked, [&](auto i) {
      if (i.local_linear() >= 8) out[ka_memory_fields * i.global_linear() + 1] = 0;
    });
    g.grid_stride(n, [&](auto i, i64 k) {
      ki::atomic_fetch_add(&hist[hash(static_cast<u64>(k)) % 16], 1u);
      if (k < i.global_linear() + 1) out[ka_memory_fields * i.global_linear() + 2] = static_cast<u64>(k);
    });
  }
};

template <class B>
std::vector<u64> run_ka_items(const B& b, const ki::ka::ndrange& r, const ki::dims& size) {
  auto out = ki_test::filled<u64>(b, r.count() * ka_fields, u64{0});
  ki::ka::kernel(b, ka_items{})({.ndrange = r, .workgroupsize = size}, out);
  return ki_test::read(b, out);
}

}  // namespace ki_spec_gpu_vs_reference

using namespace ki_spec_gpu_vs_reference;

TEMPLATE_LIST_TEST_CASE("gpu vs reference: KA kernels give the oracle's results", "[ka][differential]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto r = ki_test::config<TestType>::reference_of(b);
  const struct {
    ki::ka::ndrange range;
    ki::dims size;
  } cases[] = {{ki::ka::ndrange{1}, ki::dims(32)},
               {ki::ka::ndrange{100}, ki::dims(32)},
               {ki::ka::ndrange{1000}, ki::dims(256)},
               {ki::ka::ndrange{ki::range{-2, 7}, ki::range{-1, 4}}, ki::dims(4, 2)},
               {ki::ka::ndrange{ki::range{-1, 5}, 3, ki::range{2, 4}}, ki::dims(4, 2, 2)},
               {ki::ka::ndrange{33, 17, 3}, ki::dims(8, 8, 2)}};
  for (const auto& c : cases) {
    KI_INFO("ndrange " << c.range.str() << ", work-groups of " << c.size.str());
    compare(run_ka_items(b, c.range, c.size), run_ka_items(r, c.range, c.size), ka_fields, "KA per work-item values");
  }
  for (const i64 groups : {i64{1}, i64{5}}) {
    const i64 items = 64 * groups, n = 3 * items + 17;
    KI_INFO(groups << " work-groups of 64, grid_stride over " << n);
    auto og = ki_test::filled<u64>(b, items * ka_memory_fields, u64{0});
    auto orf = ki_test::filled<u64>(r, items * ka_memory_fields, u64{0});
    auto hg = ki_test::filled<u32>(b, 16, 0u);
    auto hr = ki_test::filled<u32>(r, 16, 0u);
    ki::ka::kernel(b, ka_memory{}, ki::ka::groupsize<64>)({.ndrange = items}, og, hg, n);
    ki::ka::kernel(r, ka_memory{}, ki::ka::groupsize<64>)({.ndrange = items}, orf, hr, n);
    compare(ki_test::read(b, og), ki_test::read(r, orf), ka_memory_fields, "KA local memory values");
    compare(ki_test::read(b, hg), ki_test::read(r, hr), 16, "KA grid-stride histogram");
  }
}

TEMPLATE_LIST_TEST_CASE("gpu vs reference: indices, barrier, local memory and atomics give the oracle's results",
                        "[indices][differential]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto r = ki_test::config<TestType>::reference_of(b);
  for (const auto& s : shapes(ki::sub_group_size(b))) {
    KI_INFO(s.groups << " work-groups of " << ki_test::str(s.e));
    auto hg = ki_test::filled<u32>(b, 17, 0u);
    auto hr = ki_test::filled<u32>(r, 17, 0u);
    const auto g = run<TestType, indices_and_memory, i64>(b, s, index_fields, indices_and_memory{}, hg);
    const auto e = run<ki::reference::backend, indices_and_memory, i64>(r, s, index_fields, indices_and_memory{}, hr);
    compare(g, e, index_fields, "per work-item values");
    compare(ki_test::read(b, hg), ki_test::read(r, hr), 17, "global histogram");
  }
}

TEMPLATE_LIST_TEST_CASE(
    "gpu vs reference: every sub-group function, with and without a width, gives the oracle's results",
    "[sub_group][differential]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto r = ki_test::config<TestType>::reference_of(b);
  const i64 W = ki::sub_group_size(b);
  for (const auto& s : shapes(W))
    for (int width = 1; width <= W; width *= 2) {
      KI_INFO(s.groups << " work-groups of " << ki_test::str(s.e) << ", width " << width << ", W = " << W);
      const auto g = run<TestType, sub_groups, u64>(b, s, sub_group_fields, sub_groups{}, width);
      const auto e = run<ki::reference::backend, sub_groups, u64>(r, s, sub_group_fields, sub_groups{}, width);
      compare(g, e, sub_group_fields, "sub-group results");
    }
}

#endif
