// ki::reference::trace (ki/reference/trace.hpp): the page shows what the oracle did. Each test
// traces a kernel whose behaviour is known from its source (the rows, the barrier rounds, the
// sub-group layout of the profile, the order the schedule chose, the diagnostic of a failing
// launch) and reads it back from the page's data attributes. Compiled in checked-access mode, so
// that races name both accesses. (tools/ki-trace/test-browser renders such pages in a browser.)
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {
using i64 = std::int64_t;

// --- reading the page back ---

/// Every element `<tag class="cls" ...>` as its attributes.
std::vector<std::map<std::string, std::string>> elements(const std::string& page, const std::string& cls) {
  std::vector<std::map<std::string, std::string>> r;
  const std::regex el("<[a-z]+ class=\"" + cls + "\"([^>]*)>");
  const std::regex attr("([a-z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), el); it != std::sregex_iterator(); ++it) {
    std::map<std::string, std::string> m;
    const std::string a = (*it)[1];
    for (auto j = std::sregex_iterator(a.begin(), a.end(), attr); j != std::sregex_iterator(); ++j)
      m[(*j)[1]] = (*j)[2];
    r.push_back(std::move(m));
  }
  return r;
}
i64 num(const std::map<std::string, std::string>& m, const std::string& k) { return std::stoll(m.at(k)); }
std::string csv(i64 from, i64 to) {  // "from,from+1,...,to-1"
  std::string s;
  for (i64 i = from; i < to; ++i) s += (s.empty() ? "" : ",") + std::to_string(i);
  return s;
}
/// The fill of each layout cell, by work-item.
std::map<i64, std::string> cell_fills(const std::string& page) {
  std::map<i64, std::string> r;
  const std::regex cell(
      "<g class=\"cell\" data-item=\"([0-9]+)\"[^>]*><title>[^<]*</title><rect [^>]*fill=\"(#[0-9a-f]+)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), cell); it != std::sregex_iterator(); ++it)
    r[std::stoll((*it)[1])] = (*it)[2];
  return r;
}
/// Per work-item, the steps of its runs in order.
std::map<i64, std::vector<i64>> run_steps(const std::string& page) {
  std::map<i64, std::vector<i64>> r;
  for (const auto& e : elements(page, "run")) r[num(e, "data-item")].push_back(num(e, "data-step"));
  return r;
}

const ki::reference::backend cuda{
    .device = ki::reference::profile::preset("cuda"), .threads = 1, .print_warnings = false};
ki::reference::backend with_seed(std::uint64_t seed) {
  ki::reference::backend b = cuda;
  b.schedule = ki::reference::schedule::from_seed(seed);
  return b;
}

// --- kernels ---

constexpr unsigned first_barrier_line = __LINE__ + 6, loop_barrier_line = __LINE__ + 9;
struct tree_sum {  // 1 + log2(n) barrier rounds, every work-item in each
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
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

constexpr unsigned shuffle_line = __LINE__ + 4;
struct segment_shuffle {  // a shuffle in segments of 8 (the cuda profile partitions sub-groups)
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x;
    out[ki::get_global_id().x] = ki::shfl_xor(l, i64{1}, 8);
  }
};

constexpr unsigned divergent_line = __LINE__ + 4;
struct divergent_barrier {  // work-items 0-15 wait forever; 16-63 exit
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x;
    if (l < 16) ki::barrier();
    out[ki::get_global_id().x] = l;
  }
};

constexpr unsigned race_write_line = __LINE__ + 5, race_read_line = __LINE__ + 6;
struct missing_barrier {  // item l writes buf[l] and reads buf[l + 1] with nothing between
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    buf[l] = l;
    out[ki::get_global_id().x] = buf[(l + 1) % n];
  }
};

constexpr unsigned ka_first_line = __LINE__ + 5, ka_sync_line = __LINE__ + 6, ka_second_line = __LINE__ + 7;
struct ka_reverse {  // two phases and a synchronize between
  template <class G>
  void operator()(G& g, ki::span<i64> a) const {
    auto buf = g.template localmem<i64, 16>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = a[i.global_linear()]; });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = buf[15 - i.local_linear()]; });
  }
};

struct ka_fill {  // one item statement
  template <class G>
  void operator()(G& g, ki::span<i64> a) const {
    g.items([&](auto i) { a[i.global_linear()] = 1; });
  }
};

std::string trace_tree(const ki::reference::backend& b, ki::reference::trace_options o = {}) {
  ki::reference::trace t(std::move(o));
  auto out = ki::zeros<i64>(b, 2);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 64, .name = "tree"}, tree_sum{}, out);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<i64>(2, 64 * 65 / 2));  // traced, it computes the same
  return t.html();
}
}  // namespace

TEST_CASE("trace: one row per work-item, grouped by sub-group, and every barrier round", "[oracle][trace]") {
  const std::string page = trace_tree(cuda);
  const auto rows = elements(page, "row");
  REQUIRE(rows.size() == 64);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    // The cuda profile lays a 1-D group out linearly: work-item l is lane l % 32 of sub-group l / 32.
    CHECK(num(rows[r], "data-item") == static_cast<i64>(r));
    CHECK(num(rows[r], "data-sub-group") == static_cast<i64>(r) / 32);
    CHECK(num(rows[r], "data-lane") == static_cast<i64>(r) % 32);
  }
  const auto releases = elements(page, "release");
  REQUIRE(releases.size() == 7);  // 1 + log2(64)
  for (std::size_t k = 0; k < releases.size(); ++k) {
    CHECK(releases[k].at("data-kind") == "barrier");
    CHECK(num(releases[k], "data-round") == static_cast<i64>(k));
    CHECK(num(releases[k], "data-items") == 64);
    CHECK(num(releases[k], "data-line") == (k == 0 ? first_barrier_line : loop_barrier_line));
  }
  CHECK(elements(page, "exit").size() == 64);
  CHECK(elements(page, "wait").size() == 7 * 64);
  CHECK(elements(page, "arrive").size() == 7 * 64);
  // Only group (0,0,0) is traced, and the page says of how many.
  REQUIRE(elements(page, "group").size() == 1);
  CHECK(elements(page, "group")[0].at("data-group") == "0,0,0");
  CHECK(page.find("group (0,0,0) of 2") != std::string::npos);
  CHECK(page.find("diagnostic\"") == std::string::npos);
}

TEST_CASE("trace: the sub-group layout, each sub-group in its own colour", "[oracle][trace]") {
  const std::string page = trace_tree(cuda);
  const auto cells = elements(page, "cell");
  REQUIRE(cells.size() == 64);
  for (const auto& c : cells) CHECK(num(c, "data-sub-group") == num(c, "data-item") / 32);
  const auto fill = cell_fills(page);
  REQUIRE(fill.size() == 64);
  for (i64 l = 0; l < 64; ++l) CHECK(fill.at(l) == fill.at(l / 32 * 32));
  CHECK(fill.at(0) != fill.at(32));
  // A partial sub-group is named as one: 48 work-items in sub-groups of 32.
  ki::reference::trace t;
  auto out = ki::zeros<i64>(cuda, 48);
  ki::launch(cuda, {.numgroups = 1, .workgroupsize = 48}, segment_shuffle{}, out);
  ki::synchronize(cuda);
  const auto legend = elements(t.html(), "legend");
  REQUIRE(legend.size() == 2);
  CHECK(num(legend[0], "data-size") == 32);
  CHECK(legend[0].count("data-partial") == 0);
  CHECK(num(legend[1], "data-size") == 16);
  CHECK(legend[1].at("data-partial") == "1");
}

TEST_CASE("trace: a 2-D group's layout is drawn per work-item with the profile's sub-groups", "[oracle][trace]") {
  // The strict profile's layout of a 6x4 group is not promised linear; the page must show the
  // one the oracle used, which the kernel itself reads back.
  const ki::reference::backend strict{
      .device = ki::reference::profile::preset("strict"), .threads = 1, .print_warnings = false};
  struct who {
    KI_DEVICE void operator()(ki::span<i64> sg) const {
      const auto l = ki::get_local_id();
      sg[l.x + 6 * l.y] = ki::get_sub_group_id();
    }
  };
  ki::reference::trace t;
  auto sg = ki::zeros<i64>(strict, 24);
  ki::launch(strict, {.numgroups = 1, .workgroupsize = {6, 4}}, who{}, sg);
  ki::synchronize(strict);
  const auto ids = ki::to_host(strict, sg);
  const auto cells = elements(t.html(), "cell");
  REQUIRE(cells.size() == 24);
  for (const auto& c : cells) CHECK(num(c, "data-sub-group") == ids[static_cast<std::size_t>(num(c, "data-item"))]);
}

TEST_CASE("trace: the order the schedule chose", "[oracle][trace]") {
  for (const std::uint64_t seed : {0u, 1u}) {
    INFO("seed " << seed);
    const std::string page = trace_tree(with_seed(seed));
    const auto steps = run_steps(page);
    REQUIRE(steps.size() == 64);
    // The first round's arrivals: forward order runs 0, 1, ..., reverse order 63, 62, ...
    for (i64 l = 0; l + 1 < 64; ++l)
      if (seed == 0) CHECK(steps.at(l).front() < steps.at(l + 1).front());
      else CHECK(steps.at(l).front() > steps.at(l + 1).front());
    CHECK(page.find("KI_REFERENCE_SEED=" + std::to_string(seed)) != std::string::npos);
    CHECK(page.find(seed == 0 ? "(forward order)" : "(reverse order)") != std::string::npos);
  }
}

TEST_CASE("trace: a sub-group function's participants, its kind and width", "[oracle][trace]") {
  ki::reference::trace t;
  auto out = ki::zeros<i64>(cuda, 64);
  ki::launch(cuda, {.numgroups = 1, .workgroupsize = 64}, segment_shuffle{}, out);
  ki::synchronize(cuda);
  const auto releases = elements(t.html(), "release");
  REQUIRE(releases.size() == 8);  // one per segment of 8 (the cuda profile resolves segments alone)
  for (const auto& r : releases) {
    CHECK(r.at("data-kind") == "shfl_xor");
    CHECK(num(r, "data-width") == 8);
    CHECK(num(r, "data-items") == 8);
    CHECK(num(r, "data-line") == shuffle_line);
  }
}

TEST_CASE("trace: a group that cannot finish shows who waits where, and who exited", "[oracle][trace]") {
  ki::reference::trace t;
  auto out = ki::zeros<i64>(cuda, 64);
  ki::launch(cuda, {.numgroups = 1, .workgroupsize = 64}, divergent_barrier{}, out);
  CHECK_THROWS_AS(ki::synchronize(cuda), ki::kernel_error);
  const std::string page = t.html();
  const auto d = elements(page, "diagnostic");
  REQUIRE(d.size() == 1);
  CHECK(d[0].at("data-kind") == "cannot-finish");
  CHECK(d[0].at("data-waiting") == csv(0, 16));
  CHECK(d[0].at("data-where") == "trace_page.cpp:" + std::to_string(divergent_line));
  const auto waiting = elements(page, "waiting");
  REQUIRE(waiting.size() == 16);
  for (std::size_t k = 0; k < waiting.size(); ++k) {
    CHECK(num(waiting[k], "data-item") == static_cast<i64>(k));
    CHECK(num(waiting[k], "data-line") == divergent_line);
  }
  const auto exits = elements(page, "exit");
  REQUIRE(exits.size() == 48);
  for (const auto& e : exits) CHECK(num(e, "data-item") >= 16);
  CHECK(page.find("waits at barrier trace_page.cpp:" + std::to_string(divergent_line)) != std::string::npos);
}

TEST_CASE("trace: a race's two accesses with their work-items and lines", "[oracle][trace]") {
  ki::reference::trace t;
  auto out = ki::zeros<i64>(cuda, 64);
  ki::launch(cuda, {.numgroups = 1, .workgroupsize = 64}, missing_barrier{}, out);
  CHECK_THROWS_AS(ki::synchronize(cuda), ki::kernel_error);
  const std::string page = t.html();
  const auto d = elements(page, "diagnostic");
  REQUIRE(d.size() == 1);
  CHECK(d[0].at("data-kind") == "data-race");
  const auto races = elements(page, "race");
  REQUIRE(!races.empty());
  // Forward order: item 0 reads buf[1] (line race_read_line) before item 1 writes it
  // (race_write_line): the first race is that pair.
  CHECK(races[0].at("data-items") == "0,1");
  CHECK(races[0].at("data-lines") == std::to_string(race_read_line) + "," + std::to_string(race_write_line));
  CHECK(races.size() <= 8);  // the first ones are drawn; the rest counted
  // Every item reads its neighbour's element unordered with the neighbour's write: 64 races
  // (item 63 reads element 0, which item 0 wrote before it).
  CHECK(num(d[0], "data-races") == 64);
  // Checked-access mode: the accesses themselves, with their element and line.
  const auto acc = elements(page, "access");
  REQUIRE(acc.size() >= 64 * 2);
  bool write_of_item_5 = false;
  for (const auto& a : acc)
    write_of_item_5 |= num(a, "data-item") == 5 && num(a, "data-index") == 5 && num(a, "data-line") == race_write_line;
  CHECK(write_of_item_5);
}

TEST_CASE("trace: a KA kernel's phases and synchronize, in the schedule's order", "[oracle][trace][ka]") {
  for (const std::uint64_t seed : {0u, 1u}) {
    INFO("seed " << seed);
    const auto b = with_seed(seed);
    ki::reference::trace t;
    auto a = ki::allocate<i64>(b, 32);
    std::vector<i64> h(32);
    for (i64 i = 0; i < 32; ++i) h[static_cast<std::size_t>(i)] = i;
    ki::copyto(b, a, h);
    ki::ka::kernel(b, ka_reverse{}, ki::ka::groupsize<16>)({.ndrange = 32}, a);
    ki::synchronize(b);
    CHECK(ki::to_host(b, a)[0] == 15);
    const std::string page = t.html();
    const auto phases = elements(page, "phase");
    REQUIRE(phases.size() == 2);
    CHECK(num(phases[0], "data-line") == ka_first_line);
    CHECK(num(phases[1], "data-line") == ka_second_line);
    const auto sync = elements(page, "release");
    REQUIRE(sync.size() == 1);
    CHECK(sync[0].at("data-kind") == "synchronize");
    CHECK(num(sync[0], "data-line") == ka_sync_line);
    CHECK(elements(page, "row").size() == 16);
    CHECK(elements(page, "cell").empty());  // (no sub-groups in a KA kernel)
    const auto steps = run_steps(page);
    REQUIRE(steps.size() == 16);
    for (i64 l = 0; l < 16; ++l) {
      REQUIRE(steps.at(l).size() == 2);  // one run per phase
      CHECK(steps.at(l)[0] < steps.at(l)[1]);
      if (l + 1 < 16) {
        if (seed == 0) CHECK(steps.at(l)[0] < steps.at(l + 1)[0]);
        else CHECK(steps.at(l)[0] > steps.at(l + 1)[0]);
      }
    }
  }
}

TEST_CASE("trace: a partial KA group's padding work-items run no item statement", "[oracle][trace][ka]") {
  ki::reference::trace t({.groups = {{1, 0, 0}}});
  auto a = ki::zeros<i64>(cuda, 12);
  ki::ka::kernel(cuda, ka_fill{}, 8)({.ndrange = 12}, a);
  ki::synchronize(cuda);
  const std::string page = t.html();
  const auto rows = elements(page, "row");
  REQUIRE(rows.size() == 8);
  const auto steps = run_steps(page);
  for (const auto& r : rows) {
    const i64 l = num(r, "data-item");
    INFO("work-item " << l);
    // Group 1 covers global 8-15 of an ndrange of 12: local 4-7 are padding.
    CHECK((r.count("data-padding") == 1) == (l >= 4));
    CHECK(steps.count(l) == (l < 4 ? 1u : 0u));
  }
}

TEST_CASE("trace: the chosen groups, the launch limit, the same page twice", "[oracle][trace]") {
  {
    const std::string page = trace_tree(cuda, {.groups = {{1, 0, 0}}});
    const auto g = elements(page, "group");
    REQUIRE(g.size() == 1);
    CHECK(g[0].at("data-group") == "1,0,0");
  }
  {
    const std::string page = trace_tree(cuda, {.groups = {{5, 0, 0}}});
    CHECK(elements(page, "group").empty());
    CHECK(page.find("none of them is in this launch") != std::string::npos);
  }
  {
    ki::reference::trace t({.max_launches = 1});
    auto out = ki::zeros<i64>(cuda, 64);
    for (int k = 0; k < 3; ++k) ki::launch(cuda, {.numgroups = 1, .workgroupsize = 64}, segment_shuffle{}, out);
    ki::synchronize(cuda);
    CHECK(t.launches() == 1);
    CHECK(t.launches_skipped() == 2);
    CHECK(t.html().find("2 later launches were not drawn") != std::string::npos);
  }
  CHECK(trace_tree(cuda) == trace_tree(cuda));  // no addresses, no clocks
}

TEST_CASE("trace: the page is written as groups end; svg(); misuse", "[oracle][trace]") {
  const std::string path = "trace_page_test.html";
  std::remove(path.c_str());
  {
    ki::reference::trace t({.path = path});
    auto out = ki::zeros<i64>(cuda, 64);
    ki::launch(cuda, {.numgroups = 1, .workgroupsize = 64}, divergent_barrier{}, out);
    CHECK_THROWS_AS(ki::synchronize(cuda), ki::kernel_error);
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    CHECK(s.str() == t.html());  // written when the group ended, without write()
    const std::string svg = t.svg(0, 0);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("cannot-finish") != std::string::npos);
    CHECK(svg.find("divergent_barrier'") != std::string::npos);  // (named by its type)
    CHECK_THROWS_AS(t.svg(1, 0), std::out_of_range);
    CHECK_THROWS_AS(ki::reference::trace(), std::logic_error);  // one at a time
    CHECK_THROWS_AS(t.write("/no/such/directory/x.html"), std::runtime_error);
  }
  std::remove(path.c_str());
  CHECK(ki::reference::set_trace_hook(nullptr) == nullptr);  // the trace removed itself
  CHECK_THROWS_AS(ki::reference::trace({.groups = {}}), std::invalid_argument);
}
