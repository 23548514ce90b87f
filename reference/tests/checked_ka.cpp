// Checked-access mode for KA kernels: reads of local and private memory that nothing wrote are
// warnings naming the read's line, the memory's line, an element and the poison; memory written
// first, a collective's results and global memory are not.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ka.hpp>

#include "gallery_support.hpp"

namespace {

using namespace ki_test::gallery;
const std::string this_file = "checked_ka.cpp";
std::string at(unsigned line) { return this_file + ":" + std::to_string(line); }

// clang-format off
/// what 0: each work-item reads the next element of a localmem no work-item wrote (16 reads);
/// what 1: each reads its @private value before writing it, then once more after (16 + 0 reads);
/// what 2: every memory written before it is read (no warning).
struct ka_unwritten {
  static constexpr unsigned line_local = __LINE__ + 4, line_private = __LINE__ + 5, line_read_local = __LINE__ + 7,
                            line_read_private = __LINE__ + 8;
  template <class G>
  void operator()(G& g, ki::span<std::int32_t> out, int what) const {
    auto buf = g.template localmem<std::int32_t, 16>([] {});
    auto mine = g.template private_<std::int32_t, 2>();
    if (what == 2) g.items([&](auto i) { buf[i.local_linear()] = 1; });
    if (what == 0) g.items([&](auto i) { out[i.global_linear()] = buf[(i.local_linear() + 1) % 16]; });
    g.items([&](auto i) {
      if (what == 1) out[i.global_linear()] = mine[i][1];
      mine[i][1] = 2;
      mine(i) = 3;
    });
    g.synchronize();
    g.items([&](auto i) { out[i.global_linear()] += mine[i][1] + mine(i) + (what == 2 ? buf[i.local_linear()] : 0); });
    const auto s = g.scan(std::plus<>{}, std::int32_t{0}, [&](auto i) { return mine(i); });
    g.items([&](auto i) { out[i.global_linear()] += s(i); });
  }
};
// clang-format on

std::vector<ki::reference::warning> run_unwritten(ki::reference::backend& b, int what,
                                                  std::vector<std::int32_t>* host = nullptr) {
  (void)ki::reference::take_warnings();
  auto out = ki::zeros<std::int32_t>(b, 32);
  ki::ka::kernel(b, ka_unwritten{}, ki::ka::groupsize<16>)({.ndrange = 32, .name = "unwritten"}, out, what);
  ki::synchronize(b);
  if (host != nullptr) *host = ki::to_host(b, out);
  return ki::reference::take_warnings();
}

}  // namespace

TEST_CASE("checked: a KA read of localmem no work-item wrote is a warning naming both lines", "[oracle][checked]") {
  for (const auto order : {ki::reference::order::forward, ki::reference::order::reverse}) {
    auto b = backend_for("cuda");
    b.schedule.items = order;
    const auto w = run_unwritten(b, 0);
    REQUIRE(w.size() == 1);
    CHECK(w[0].kind == "uninitialized-local-read");
    CHECK(w[0].where == at(ka_unwritten::line_read_local));
    CHECK(w[0].count == 32);  // 16 work-items in each of 2 groups
    // The first read of a group (forward: work-item 0 reads element 1; reverse: 15 reads 0).
    const std::string e = order == ki::reference::order::forward ? "1" : "0";
    CHECK(w[0].message == "read at " + at(ka_unwritten::line_read_local) + " of localmem at " +
                              at(ka_unwritten::line_local) +
                              " before any work-item of the group wrote the element (e.g. element " + e +
                              "; unspecified values, filled with the poison word 0xFFBADBAD), 32 times");
  }
}

TEST_CASE("checked: a KA read of @private memory before its work-item wrote it is a warning", "[oracle][checked]") {
  auto b = backend_for("cuda");
  std::vector<std::int32_t> h;
  const auto w = run_unwritten(b, 1, &h);
  REQUIRE(w.size() == 1);
  CHECK(w[0].kind == "uninitialized-private-read");
  CHECK(w[0].where == at(ka_unwritten::line_read_private));
  CHECK(w[0].count == 32);
  CHECK(w[0].message == "read at " + at(ka_unwritten::line_read_private) + " of private memory at " +
                            at(ka_unwritten::line_private) +
                            " before its work-item wrote the element (e.g. element 1 of work-item (0, 0, 0); "
                            "unspecified values, filled with the poison word 0xFFBADBAD), 32 times");
  // What was read is the poison word (as int32: 0xFFBADBAD), then 2 + 3 and the scan 3 * (l + 1).
  for (std::int64_t k = 0; k < 32; ++k) {
    const std::int32_t poison = static_cast<std::int32_t>(0xFFBADBADu);
    CHECK(h[static_cast<std::size_t>(k)] == static_cast<std::int32_t>(static_cast<std::uint32_t>(poison) + 5u +
                                                                      3u * static_cast<std::uint32_t>(k % 16 + 1)));
  }
}

TEST_CASE("checked: KA memory written before it is read, and a collective's results, warn of nothing",
          "[oracle][checked]") {
  for (const auto order :
       {ki::reference::order::forward, ki::reference::order::reverse, ki::reference::order::random}) {
    auto b = backend_for("cuda", 3);
    b.schedule.items = order;
    std::vector<std::int32_t> h;
    const auto w = run_unwritten(b, 2, &h);
    CHECK(w.empty());
    for (std::int64_t k = 0; k < 32; ++k) CHECK(h[static_cast<std::size_t>(k)] == 6 + 3 * (k % 16 + 1));
  }
}

namespace {
/// Every work-item reads all of `in` (its group's record of it: one entry per element).
struct ka_read_all {
  template <class G>
  void operator()(G& g, ki::span<std::int64_t> out, ki::span<const std::int64_t> in) const {
    g.items([&](auto i) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < in.size(); ++k) s += in[k];
      out[i.global_linear()] = s;
    });
  }
};
}  // namespace

TEST_CASE("checked: a KA launch's record of global accesses is bounded by checked_elements", "[oracle][checked]") {
  auto b = backend_for("cuda");
  // 64 groups x 4 work-items read 1024 elements: 65536 (group, element) pairs, but 1024 + 256
  // elements, which a limit of 2000 holds (the record keeps one entry per element).
  b.checked_elements = 2000;
  auto in = ki::zeros<std::int64_t>(b, 1024);
  auto out = ki::zeros<std::int64_t>(b, 256);
  ki::ka::kernel k(b, ka_read_all{}, ki::ka::groupsize<4>);
  k({.ndrange = 256}, out, ki::ka::Const(in));
  CHECK_NOTHROW(ki::synchronize(b));
  // Beyond the limit: a resource error naming it, and the backend stays usable.
  b.checked_elements = 1000;
  ki::ka::kernel(b, ka_read_all{}, ki::ka::groupsize<4>)({.ndrange = 256}, out, ki::ka::Const(in));
  try {
    ki::synchronize(b);
    FAIL("no error beyond the limit");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::resource);
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("more than 1000 records") != std::string::npos);
    CHECK(m.find("checked_elements") != std::string::npos);
  }
  b.checked_elements = 0;
  ki::ka::kernel(b, ka_read_all{}, ki::ka::groupsize<4>)({.ndrange = 256}, out, ki::ka::Const(in));
  CHECK_NOTHROW(ki::synchronize(b));
}
