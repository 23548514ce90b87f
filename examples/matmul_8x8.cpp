// The SIMD-group matrix example of metal-advanced-kernel-programming.txt, `matmul_8x8!`: one
// sub-group loads two 8x8 matrices, multiplies them and stores the product. Then the tiled form
// the text describes ("Larger products accumulate tiles with muladd, starting from zero"): each
// work-group of one sub-group computes one 8x8 tile of C = A * B by muladd over the tiles of k.
//
// ki::sub_group_matrix is spread over a full sub-group (64 / W elements per lane) and every
// operation on it is a collective, like a shuffle: all lanes run it together. The products are
// exact in the documented order (one fma per step, k ascending), so the host's plain loop gives
// the same bits on every backend.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ki/sub_group_matrix.hpp>

#include "example_main.hpp"

struct matmul_8x8 {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b) const {
    const auto ma = ki::sub_group_load(a);
    const auto mb = ki::sub_group_load(b);
    ki::sub_group_store(ki::multiply(ma, mb), c);
  }
};

/// C (m x n) = A (m x k) * B (k x n), all row-major; work-group (i, j) computes tile (i, j).
struct matmul_tiled {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b, std::int64_t k,
                            std::int64_t n) const {
    const std::int64_t ti = 8 * ki::get_group_id().x, tj = 8 * ki::get_group_id().y;
    auto acc = ki::sub_group_matrix<float>::zero();
    for (std::int64_t t = 0; t < k; t += 8)
      acc = ki::muladd(ki::sub_group_load(a, k, {ti, t}), ki::sub_group_load(b, n, {t, tj}), acc);
    ki::sub_group_store(acc, c, n, {ti, tj});
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const std::int64_t W = ki::sub_group_size(backend);
  if (!ki::supports_linear_subgroups(backend))
    return ki_example::skipped("matmul_8x8", "the device does not promise full sub-groups for a group of W items");
  const auto value = [](std::int64_t i, int salt) { return static_cast<float>((i * 29 + salt * 7) % 17 - 8) / 4.0f; };
  const std::int64_t m = 32, k = 48, n = 24;
  std::vector<float> ha(m * k), hb(k * n);
  for (std::int64_t i = 0; i < m * k; ++i) ha[i] = value(i, 1);
  for (std::int64_t i = 0; i < k * n; ++i) hb[i] = value(i, 2);

  // matmul_8x8!: the top-left 8x8 blocks, copied densely.
  std::vector<float> a8(64), b8(64);
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) a8[r * 8 + col] = ha[r * k + col], b8[r * 8 + col] = hb[r * n + col];
  auto a = ki::to_device(backend, a8), b = ki::to_device(backend, b8);
  auto c = ki::zeros<float>(backend, 64);
  ki::launch(backend, {.numgroups = 1, .workgroupsize = W}, matmul_8x8{}, c, a, b);
  const auto c8 = ki::to_host(backend, c);
  bool ok8 = true;
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) {
      float acc = 0;
      for (int i = 0; i < 8; ++i) acc = std::fma(a8[r * 8 + i], b8[i * 8 + col], acc);
      ok8 = ok8 && c8[r * 8 + col] == acc;
    }

  auto da = ki::to_device(backend, ha), db = ki::to_device(backend, hb);
  auto dc = ki::zeros<float>(backend, m * n);
  ki::launch(backend, {.numgroups = ki::dims(m / 8, n / 8), .workgroupsize = W}, matmul_tiled{}, dc, da, db, k, n);
  const auto hc = ki::to_host(backend, dc);
  bool ok = true;
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t col = 0; col < n; ++col) {
      float acc = 0;
      for (std::int64_t i = 0; i < k; ++i) acc = std::fma(ha[r * k + i], hb[i * n + col], acc);
      ok = ok && hc[r * n + col] == acc;
    }
  return ki_example::report("matmul_8x8", ok8 && ok,
                            "8x8 product and a " + std::to_string(m) + "x" + std::to_string(k) + " by " +
                                std::to_string(k) + "x" + std::to_string(n) +
                                " product from 8x8 tiles, sub-group width " + std::to_string(W) + ", bit for bit");
}

KI_EXAMPLE_MAIN(run)
