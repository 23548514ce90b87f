// The model in pictures (docs/model.md): one small kernel per idea, each launched under its own
// name on the reference backend, so that `ki-trace --svg docs/model` draws one picture per
// idea (the build target ki_model_pictures does that; a test fails when the checked-in
// pictures are stale). Run on its own, it checks what each kernel computed. Built in
// checked-access mode, so that the race lesson shows both accesses.
//
// The emulated device is small on purpose: sub-groups of 8 lanes, so that a group of 16
// work-items has two sub-groups and every row of a picture is readable.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {
using i64 = std::int64_t;

// 1. Work-items, work-groups, sub-groups and lanes: every work-item writes who it is.
struct who_am_i {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 at = ki::get_global_id().x + 8 * ki::get_global_id().y;
    out[at] = 100 * ki::get_sub_group_id() + ki::get_sub_group_local_id();
  }
};

// 2. A barrier: every work-item stores, all wait, then each reads its neighbour's value.
struct neighbour {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 16>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    buf[l] = 10 * l;
    ki::barrier();  // every store of the group happens before any load after it
    out[ki::get_global_id().x] = buf[(l + 1) % n];
  }
};

// 3. A tree reduction: one barrier per halving; every work-item executes every barrier.
struct tree_sum {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 16>([] {});
    const i64 l = ki::get_local_id().x;
    buf[l] = l + 1;
    ki::barrier();
    for (i64 s = ki::get_local_size().x / 2; s > 0; s /= 2) {
      if (l < s) buf[l] += buf[l + s];
      ki::barrier();
    }
    if (l == 0) out[ki::get_group_id().x] = buf[0];
  }
};

// 4. Divergence: a barrier that only some work-items reach. They wait forever; the oracle
// reports that the group cannot finish, naming who waits where and who exited.
struct divergent {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x;
    if (l < 4) ki::barrier();  // BUG: work-items 4-15 never come
    out[ki::get_global_id().x] = l;
  }
};

// 5. A partial sub-group: 12 work-items in sub-groups of 8 make one full sub-group and one
// of 4 lanes; a sub-group reduction runs over the lanes that have work-items.
struct partial_sum {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    out[ki::get_global_id().x] = ki::sub_group_reduce(std::plus<>{}, i64{1});
  }
};

// 6. Shuffles with a width: shfl_xor with width 4 exchanges within segments of 4 lanes (on a
// device with partitionable sub-groups each segment goes alone); shfl_down over the whole
// sub-group.
struct shuffles {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 lane = ki::get_sub_group_local_id();
    const i64 a = ki::shfl_xor(lane, i64{1}, 4);
    out[ki::get_global_id().x] = 100 * a + ki::shfl_down(lane, 1);
  }
};

// 7. A race: the store and the neighbour's load with no barrier between them.
struct racy_neighbour {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 16>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    buf[l] = 10 * l;
    out[ki::get_global_id().x] = buf[(l + 1) % n];  // BUG: no barrier before this load
  }
};

// 8. A KA kernel (ki/ka.hpp): group-level code with explicit phases; synchronize between them.
struct ka_reverse {
  template <class G>
  void operator()(G& g, ki::span<i64> a) const {
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = a[i.global_linear()]; });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = buf[7 - i.local_linear()]; });
  }
};

// 9. A partial KA work-group: 12 work-items in groups of 8. The second group has 4 padding
// work-items: they run the group-level code and the collective (contributing the neutral
// element without evaluating the value) but no item statement.
struct ka_group_sums {
  template <class G>
  void operator()(G& g, ki::span<i64> out, ki::span<const i64> x) const {
    const auto s = g.reduce(std::plus<>{}, i64{0}, [&](auto i) { return x[i.global_linear()]; });
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = s;
    });
  }
};

ki::reference::profile tour_profile() {
  ki::reference::profile p = ki::reference::profile::preset("cuda");
  p.name = "tour (sub-groups of 8)";
  p.sub_group_width = 8;
  return p;
}

bool report(const char* lesson, bool ok) {
  std::printf("%-24s %s\n", lesson, ok ? "OK" : "MISMATCH");
  return ok;
}

template <class K, class A>
bool fails(const ki::reference::backend& b, const char* name, i64 size, K k, A& out) {
  ki::launch(b, {.numgroups = 1, .workgroupsize = size, .name = name}, k, out);
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error&) {  // (what the oracle says is on the picture)
    return true;
  }
  return false;
}
}  // namespace

int main() {
  const ki::reference::backend b{.device = tour_profile(), .threads = 1, .print_warnings = false};
  ki::reference::backend reversed = b;
  reversed.schedule = ki::reference::schedule::from_seed(1);
  bool ok = true;

  auto out = ki::zeros<i64>(b, 16);
  ki::launch(b, {.numgroups = 1, .workgroupsize = {8, 2}, .name = "model-items"}, who_am_i{}, out);
  auto h = ki::to_host(b, out);
  bool good = true;
  for (i64 i = 0; i < 16; ++i) good &= h[static_cast<std::size_t>(i)] == 100 * (i / 8) + i % 8;  // linear: x extent 8
  ok &= report("work-items and lanes", good);

  ki::launch(b, {.numgroups = 1, .workgroupsize = 16, .name = "model-barrier"}, neighbour{}, out);
  h = ki::to_host(b, out);
  good = true;
  for (i64 i = 0; i < 16; ++i) good &= h[static_cast<std::size_t>(i)] == 10 * ((i + 1) % 16);
  ok &= report("barrier", good);

  ki::launch(reversed, {.numgroups = 1, .workgroupsize = 16, .name = "model-barrier-reversed"}, neighbour{}, out);
  ok &= report("barrier, reverse order", ki::to_host(reversed, out) == h);

  ki::launch(b, {.numgroups = 1, .workgroupsize = 16, .name = "model-tree"}, tree_sum{}, out);
  ok &= report("tree reduction", ki::to_host(b, out)[0] == 16 * 17 / 2);

  ok &= report("divergent barrier", fails(b, "model-divergence", 16, divergent{}, out));

  ki::launch(b, {.numgroups = 1, .workgroupsize = 12, .name = "model-partial"}, partial_sum{}, out);
  h = ki::to_host(b, out);
  good = true;
  for (i64 i = 0; i < 12; ++i) good &= h[static_cast<std::size_t>(i)] == (i < 8 ? 8 : 4);
  ok &= report("partial sub-group", good);

  ki::launch(b, {.numgroups = 1, .workgroupsize = 16, .name = "model-shuffle"}, shuffles{}, out);
  h = ki::to_host(b, out);
  good = true;
  for (i64 i = 0; i < 16; ++i) {
    const i64 lane = i % 8;
    good &=
        lane == 7 || h[static_cast<std::size_t>(i)] == 100 * (lane ^ 1) + lane + 1;  // lane 7's down read: unspecified
  }
  ok &= report("shuffles with a width", good);

  ok &= report("race (checked access)", fails(b, "model-race", 16, racy_neighbour{}, out));

  auto a = ki::allocate<i64>(b, 8);
  std::vector<i64> ha(8);
  std::iota(ha.begin(), ha.end(), 0);
  ki::copyto(b, a, ha);
  ki::ka::kernel(b, ka_reverse{}, ki::ka::groupsize<8>)({.ndrange = 8, .name = "model-ka"}, a);
  ok &= report("KA phases", ki::to_host(b, a) == std::vector<i64>{7, 6, 5, 4, 3, 2, 1, 0});

  auto x = ki::allocate<i64>(b, 12);
  std::vector<i64> hx(12, 1);
  ki::copyto(b, x, hx);
  auto sums = ki::zeros<i64>(b, 2);
  ki::ka::kernel(b, ka_group_sums{}, 8)({.ndrange = 12, .name = "model-ka-partial"}, sums, ki::ka::Const(x));
  ok &= report("KA partial group", ki::to_host(b, sums) == std::vector<i64>{8, 4});

  // A layout the device does not promise linear: a 6x4 group on a device that scatters lanes.
  ki::reference::backend scattered = b;
  scattered.device.linear_subgroups = false;
  scattered.device.unpromised_layout = ki::reference::layout::adversarial;
  scattered.device.name = "scattered (sub-groups of 8, no layout promise)";
  auto ids = ki::zeros<i64>(scattered, 24);
  struct sg_of {
    KI_DEVICE void operator()(ki::span<i64> o) const {
      o[ki::get_local_id().x + 6 * ki::get_local_id().y] = ki::get_sub_group_id();
    }
  };
  ki::launch(scattered, {.numgroups = 1, .workgroupsize = {6, 4}, .name = "model-layout"}, sg_of{}, ids);
  const auto hid = ki::to_host(scattered, ids);
  ok &= report("a scattered layout", *std::max_element(hid.begin(), hid.end()) >= 3);  // 24 items: >= 3 sub-groups
  return ok ? 0 : 1;
}
