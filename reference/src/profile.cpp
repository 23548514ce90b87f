// Device profiles of the reference backend: the presets and their validation.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ki/reference/backend.hpp>

namespace ki::reference {

profile profile::preset(std::string_view name) {
  profile p;  // cuda: 32 wide, linear, independent, partitionable, float64
  if (name == "cuda") return p;
  if (name == "amd-wave64" || name == "amd-wave32") {
    p.name = name == "amd-wave64" ? "amd-wave64" : "amd-wave32";
    p.sub_group_width = name == "amd-wave64" ? 64 : 32;
    p.max_local_memory = 64 * 1024;
    p.max_num_groups = {2147483647, 65535, 65535};
    p.partitionable_subgroups = false;  // a wavefront's segments don't diverge independently
    return p;
  }
  if (name == "intel") {
    p.name = "intel";
    p.sub_group_width = 16;
    p.linear_subgroups = false;  // OpenCL/SYCL leave the layout to the implementation
    p.unpromised_layout = layout::adversarial;
    p.partitionable_subgroups = false;
    p.float64 = false;
    p.max_local_memory = 64 * 1024;
    return p;
  }
  if (name == "apple") {
    p.name = "apple";
    p.atomics64 = false;  // Metal: 64-bit atomics only min/max on Apple8, not modelled
    p.max_local_memory = 32 * 1024;
    p.partitionable_subgroups = false;
    p.float64 = false;
    return p;
  }
  if (name == "strict") {
    // Everything the spec lets vary, varied against the kernel: no layout promise (scattered
    // lanes, several partial sub-groups), no independent or partitionable sub-groups, random
    // poison, small limits, no float64, no unified memory.
    p.name = "strict";
    p.sub_group_width = 16;
    p.max_work_group_size = 256;
    p.max_work_group_dims = {256, 256, 64};
    p.max_num_groups = {65535, 65535, 65535};
    p.max_local_memory = 16 * 1024;
    p.linear_subgroups = false;
    p.unpromised_layout = layout::adversarial;
    p.independent_subgroups = false;
    p.partitionable_subgroups = false;
    p.float64 = false;
    p.unified = false;  // optional in the spec
    p.poison_seed = 0x5eed;
    return p;
  }
  throw std::invalid_argument("ki::reference: unknown profile '" + std::string(name) +
                              "' (known: cuda, amd-wave64, amd-wave32, intel, apple, strict)");
}

namespace {
/// The presets KI_REFERENCE_PROFILE names, separated by commas (empty when it is not set).
/// A name that is not a preset is std::invalid_argument naming it (preset's message).
std::vector<profile> environment_presets() {
  std::vector<profile> r;
  const char* v = std::getenv("KI_REFERENCE_PROFILE");
  if (v == nullptr || *v == '\0') return r;
  const std::string_view all(v);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = all.find(',', start);
    r.push_back(profile::preset(all.substr(start, comma == std::string_view::npos ? all.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return r;
}
}  // namespace

profile profile::from_environment() {
  // With several names: the first (each device then has its own: device_profiles).
  static const profile p = [] {
    const auto presets = environment_presets();
    return presets.empty() ? profile{} : presets.front();
  }();
  return p;
}

std::vector<profile> backend::device_profiles_from_environment() {
  // Never throws: a backend value that sets `device` itself may be made during static
  // initialisation, and an unknown name is reported where `device` is read from the
  // environment (profile::from_environment, the default of `device`).
  static const std::vector<profile> list = []() -> std::vector<profile> {
    try {
      auto presets = environment_presets();
      if (presets.size() < 2) presets.clear();  // one name: every device emulates it (`device`)
      return presets;
    } catch (const std::invalid_argument&) {
      return {};
    }
  }();
  return list;
}

namespace detail {

void validate(const profile& p) {
  const auto w = p.sub_group_width;
  if (w < 1 || w > 64 || (w & (w - 1)) != 0)
    throw std::invalid_argument("ki::reference: profile sub_group_width = " + std::to_string(w) +
                                " must be a power of two between 1 and 64");
  if (p.partitionable_subgroups && !p.independent_subgroups)
    throw std::invalid_argument("ki::reference: profile '" + std::string(p.name) +
                                "': partitionable_subgroups implies independent_subgroups");
  if (p.max_work_group_size < 1)
    throw std::invalid_argument(
        "ki::reference: profile max_work_group_size = " + std::to_string(p.max_work_group_size) + " must be positive");
}

}  // namespace detail
}  // namespace ki::reference
