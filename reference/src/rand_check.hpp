// The oracle's checks of ki::seed (ki/rand.hpp): one per launch, shared by its groups.
//
// The spec's rule: every work-item of a launch that draws calls ki::seed(s), with the same s,
// before its first draw. Three ways to break it are reported (kernel_error::kind::invalid_seed),
// each at the call that completes the evidence, whatever order the work-items run in:
//   * two work-items seed with different values;
//   * a work-item seeds after it has drawn (its earlier numbers came from another stream);
//   * some work-items seed while others draw unseeded (the launch is reproducible for some
//     work-items only).
// Only the first seed and the first unseeded draw of the launch are kept, under a lock that
// work-items take at most twice (the first seed, the first unseeded draw).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>

namespace ki::reference::detail {

class rand_check final : public ki::detail::cpu::rand_checker {
 public:
  void seeded(const ki::detail::cpu::item_state& it, std::uint64_t s, std::uint32_t draws,
              const source_location& where) override {
    if (draws > 0)
      fail("called ki::seed(" + std::to_string(s) + ") at " + site(where) + " after it had drawn " +
           std::to_string(draws) + (draws == 1 ? " number" : " numbers") +
           " (every work-item seeds before its first draw)");
    std::lock_guard lock(m_);
    if (unseeded_)
      fail("called ki::seed(" + std::to_string(s) + ") at " + site(where) + ", but " + unseeded_who_ +
           " drew without seeding at " + unseeded_at_ +
           " (in a launch that seeds, every work-item that draws seeds first)");
    if (!seeded_) {
      seeded_ = true, seed_ = s, seed_who_ = who(it), seed_at_ = site(where);
      return;
    }
    if (s != seed_)
      fail("called ki::seed(" + std::to_string(s) + ") at " + site(where) + ", but " + seed_who_ + " seeded with " +
           std::to_string(seed_) + " at " + seed_at_ + " (every work-item of a launch seeds with the same value)");
  }
  void unseeded_draw(const ki::detail::cpu::item_state& it, const source_location& where) override {
    std::lock_guard lock(m_);
    if (seeded_)
      fail("drew a random number without seeding at " + site(where) + ", but " + seed_who_ + " called ki::seed(" +
           std::to_string(seed_) + ") at " + seed_at_ +
           " (in a launch that seeds, every work-item that draws seeds first)");
    if (!unseeded_) unseeded_ = true, unseeded_who_ = who(it), unseeded_at_ = site(where);
  }

 private:
  [[noreturn]] static void fail(std::string msg) {
    throw ki::detail::cpu::item_failure{kernel_error::kind::invalid_seed, std::move(msg)};
  }
  static std::string xyz_string(const xyz<std::int64_t>& v) {
    return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
  }
  static std::string who(const ki::detail::cpu::item_state& it) {
    return "work-item " + xyz_string(it.local_id) + " of work-group " + xyz_string(it.group->group_id);
  }
  static std::string site(const source_location& w) {
    return std::string(ki::detail::base_name(w.file)) + ":" + std::to_string(w.line);
  }
  std::mutex m_;
  bool seeded_ = false, unseeded_ = false;
  std::uint64_t seed_ = 0;
  std::string seed_who_, seed_at_, unseeded_who_, unseeded_at_;
};

}  // namespace ki::reference::detail
