// bfs (Rodinia's level-synchronous breadth-first search, examples/ka_bfs.hpp): a random directed
// graph of 5000 nodes (about 3 edges each), two KA kernels per level, checked against a plain
// queue-based search on the host.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "ka_bfs.hpp"

template <ki::backend B>
bool run(const B& backend) {
  const ki_bfs::graph gr = ki_bfs::random_graph(5000, 3);
  ki_bfs::search<B> s(backend, gr);
  const int levels = s.run(0);
  const auto cost = ki::to_host(backend, s.cost);

  const std::vector<ki_bfs::i32> want = ki_bfs::bfs_host(gr, 0);
  const auto reached = std::count_if(want.begin(), want.end(), [](ki_bfs::i32 c) { return c >= 0; });
  const auto deepest = *std::max_element(want.begin(), want.end());
  // Every cost exactly; the levels the kernels ran: one per depth, and one that found nothing.
  return ki_example::report("ka_bfs", cost == want && levels == deepest + 1,
                            std::to_string(gr.nodes()) + " nodes, " + std::to_string(gr.edges.size()) +
                                " edges: " + std::to_string(reached) + " reached from node 0 in " +
                                std::to_string(levels) + " levels, deepest " + std::to_string(deepest));
}

KI_EXAMPLE_MAIN(run)
