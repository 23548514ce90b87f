// bfs: the level-synchronous breadth-first search of the Rodinia benchmark suite's "bfs", two KA
// kernels per level, the host looping while a level found a new node.
//
// The graph is in compressed rows: node v's edges are edges[first[v] .. first[v + 1]). Per level:
//   expand  one work-item per node: a node of the frontier leaves it and, for each edge to a
//           node not yet visited, sets that node's cost to this level + 1 and marks it "next";
//   advance one work-item per node: a node marked "next" joins the frontier, is visited, and
//           sets the flag `found` that tells the host to run another level.
// Several frontier nodes may reach one new node in a level: they store the same cost and the
// same mark into it. Rodinia writes those as plain stores, which is a data race by the model
// (and the oracle reports it); here they are relaxed atomic stores, which cost a plain store on
// the CPU and on a GPU, and make the kernel race-free: every ki backend runs it unchanged.
// Shared by examples/ka_bfs.cpp (checked against bfs_host) and ki_bench_simd_cpu (timed against
// the same algorithm in OpenMP).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include <ki/ka.hpp>

namespace ki_bfs {

using i64 = std::int64_t;
using i32 = std::int32_t;
constexpr i64 group = 256;

/// Kernel 1: the frontier's edges, for level `level` (the frontier's cost).
struct expand {
  template <class G>
  void operator()(G& g, ki::span<i32> frontier, ki::span<i32> next, ki::span<i32> cost, ki::span<const i32> visited,
                  ki::span<const i64> first, ki::span<const i32> edges, i32 level) const {
    g.items([&](auto i) {
      const i64 v = i.global_linear();
      if (!frontier[v]) return;
      frontier[v] = 0;
      for (i64 e = first[v]; e < first[v + 1]; ++e) {
        const i32 w = edges[e];
        if (!visited[w]) {
          ki::atomic_store(&cost[w], level + 1);
          ki::atomic_store(&next[w], 1);
        }
      }
    });
  }
};

/// Kernel 2: the marked nodes become the frontier; found[0] = 1 if there was one.
struct advance {
  template <class G>
  void operator()(G& g, ki::span<i32> frontier, ki::span<i32> next, ki::span<i32> visited, ki::span<i32> found) const {
    g.items([&](auto i) {
      const i64 v = i.global_linear();
      if (!next[v]) return;
      frontier[v] = 1;
      visited[v] = 1;
      next[v] = 0;
      ki::atomic_store(&found[0], 1);
    });
  }
};

/// A graph in compressed rows.
struct graph {
  std::vector<i64> first;  // n + 1 entries
  std::vector<i32> edges;
  i64 nodes() const { return static_cast<i64>(first.size()) - 1; }
};

/// The device arrays of one search on backend B.
template <ki::backend B>
struct search {
  B backend;
  i64 n;
  ki::array<i64, B> first;
  ki::array<i32, B> edges, frontier, next, visited, cost, found;

  search(const B& b, const graph& gr)
      : backend(b),
        n(gr.nodes()),
        first(ki::to_device(b, gr.first)),
        edges(ki::to_device(b, gr.edges)),
        frontier(ki::zeros<i32>(b, n)),
        next(ki::zeros<i32>(b, n)),
        visited(ki::zeros<i32>(b, n)),
        cost(ki::zeros<i32>(b, n)),
        found(ki::zeros<i32>(b, 1)) {}

  /// The search from `source`: cost[v] = the number of edges on a shortest path from source to
  /// v, -1 where there is none. Returns the number of levels.
  int run(i32 source) {
    std::vector<i32> start(static_cast<std::size_t>(n), 0), costs(static_cast<std::size_t>(n), -1);
    ki::copyto(backend, next, start);
    start[static_cast<std::size_t>(source)] = 1;  // the source: visited, the first frontier, cost 0
    ki::copyto(backend, visited, start);
    ki::copyto(backend, frontier, start);
    costs[static_cast<std::size_t>(source)] = 0;
    ki::copyto(backend, cost, costs);
    const ki::ka::kernel k_expand(backend, expand{}, ki::ka::groupsize<group>, ki::ka::ndrange{n});
    const ki::ka::kernel k_advance(backend, advance{}, ki::ka::groupsize<group>, ki::ka::ndrange{n});
    const std::vector<i32> zero{0};
    for (i32 level = 0;; ++level) {
      ki::copyto(backend, found, zero);
      k_expand(frontier, next, cost, std::as_const(visited), std::as_const(first), std::as_const(edges), level);
      k_advance(frontier, next, visited, found);
      if (ki::to_host(backend, found)[0] == 0) return level + 1;
    }
  }
};

/// The same levels on the host, nodes [v0, v1) of each step (the OpenMP baseline runs them per
/// thread). Stores that several nodes of a level make to one node (the same value) go through
/// std::atomic_ref, as the kernels' do.
inline void expand_nodes(i32* frontier, i32* next, i32* cost, const i32* visited, const i64* first, const i32* edges,
                         i32 level, i64 v0, i64 v1) {
  for (i64 v = v0; v < v1; ++v) {
    if (!frontier[v]) continue;
    frontier[v] = 0;
    for (i64 e = first[v]; e < first[v + 1]; ++e) {
      const i32 w = edges[e];
      if (!visited[w]) {
        std::atomic_ref<i32>(cost[w]).store(level + 1, std::memory_order_relaxed);
        std::atomic_ref<i32>(next[w]).store(1, std::memory_order_relaxed);
      }
    }
  }
}
/// Returns whether a node of [v0, v1) joined the frontier.
inline bool advance_nodes(i32* frontier, i32* next, i32* visited, i64 v0, i64 v1) {
  bool any = false;
  for (i64 v = v0; v < v1; ++v) {
    if (!next[v]) continue;
    frontier[v] = visited[v] = 1;
    next[v] = 0;
    any = true;
  }
  return any;
}

/// The costs by a plain queue-based search (the examples' reference, independent of the levels).
inline std::vector<i32> bfs_host(const graph& gr, i32 source) {
  std::vector<i32> cost(static_cast<std::size_t>(gr.nodes()), -1);
  std::deque<i32> queue{source};
  cost[static_cast<std::size_t>(source)] = 0;
  while (!queue.empty()) {
    const i32 v = queue.front();
    queue.pop_front();
    for (i64 e = gr.first[static_cast<std::size_t>(v)]; e < gr.first[static_cast<std::size_t>(v) + 1]; ++e) {
      const i32 w = gr.edges[static_cast<std::size_t>(e)];
      if (cost[static_cast<std::size_t>(w)] < 0) {
        cost[static_cast<std::size_t>(w)] = cost[static_cast<std::size_t>(v)] + 1;
        queue.push_back(w);
      }
    }
  }
  return cost;
}

/// A random directed graph of n nodes (Rodinia's generator's shape): each node has 1 to
/// 2 degree - 1 edges to uniformly drawn nodes; a fixed LCG, the same graph everywhere.
inline graph random_graph(i64 n, int degree) {
  graph gr;
  gr.first.reserve(static_cast<std::size_t>(n) + 1);
  gr.first.push_back(0);
  std::uint64_t state = 7;
  const auto draw = [&](std::uint64_t bound) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return (state >> 33) % bound;
  };
  for (i64 v = 0; v < n; ++v) {
    const auto d = 1 + draw(static_cast<std::uint64_t>(2 * degree - 1));
    for (std::uint64_t j = 0; j < d; ++j) gr.edges.push_back(static_cast<i32>(draw(static_cast<std::uint64_t>(n))));
    gr.first.push_back(static_cast<i64>(gr.edges.size()));
  }
  return gr;
}

}  // namespace ki_bfs
