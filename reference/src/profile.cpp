// Device profiles of the reference backend: the presets and their validation.
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ki/reference/backend.hpp>

namespace ki::reference {

namespace {
/// The presets: their one table (profile::presets()). A row sets its name and what differs from
/// the defaults, which are the cuda preset's: 32 wide, linear, independent, partitionable,
/// float64. reference/CMakeLists.txt reads the names from this table for the CTests that run
/// once per preset (KI_REFERENCE_PRESETS), so each row keeps its name designator and string on
/// one line; oracle/"profiles: the build reads the preset names from their table" checks that
/// it read them all. docs/sub-groups.md, "Device profiles", has a line for each preset.
constexpr profile preset_table[] = {
    {.name = "cuda"},  // (the defaults: profile{})
    {
        .sub_group_width = 64,
        .max_local_memory = 64 * 1024,
        .partitionable_subgroups = false,  // a wavefront's segments don't diverge independently
        .name = "amd-wave64",
    },
    {
        .sub_group_width = 32,
        .max_local_memory = 64 * 1024,
        .partitionable_subgroups = false,
        .name = "amd-wave32",
    },
    {
        .sub_group_width = 16,
        .max_local_memory = 64 * 1024,
        .linear_subgroups = false,  // OpenCL/SYCL leave the layout to the implementation
        .unpromised_layout = layout::adversarial,
        .partitionable_subgroups = false,
        .float64 = false,
        .name = "intel",
    },
    {
        .max_local_memory = 32 * 1024,
        .partitionable_subgroups = false,
        .float64 = false,
        .atomics64 = false,  // Metal: 64-bit atomics only min/max on Apple8, not modelled
        .name = "apple",
    },
    // Everything the spec lets vary, varied against the kernel: no layout promise (scattered
    // lanes, several partial sub-groups), no independent or partitionable sub-groups, random
    // poison, small limits, no float64, no unified memory.
    {
        .sub_group_width = 16,
        .max_work_group_size = 256,
        .max_work_group_dims = {256, 256, 64},
        .max_num_groups = {65535, 65535, 65535},
        .max_local_memory = 16 * 1024,
        .linear_subgroups = false,
        .unpromised_layout = layout::adversarial,
        .independent_subgroups = false,
        .partitionable_subgroups = false,
        .float64 = false,
        .unified = false,  // optional in the spec
        .poison_seed = 0x5eed,
        .name = "strict",
    },
};
}  // namespace

std::span<const profile> profile::presets() { return preset_table; }

profile profile::preset(std::string_view name) {
  for (const profile& p : preset_table)
    if (name == p.name) return p;
  std::string known;
  for (const profile& p : preset_table) known += (known.empty() ? "" : ", ") + std::string(p.name);
  throw std::invalid_argument("ki::reference: unknown profile '" + std::string(name) + "' (known: " + known + ")");
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
