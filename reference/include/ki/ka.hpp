// The KA layer (the spec's @kernel language): group-level kernel bodies whose per-work-item
// statements and synchronisation points are explicit, so that CPU backends run each phase as a
// plain loop (docs/ka-layer.md). Include it with the backends the program launches on.
#pragma once
#include <ki/ka/const.hpp>
#include <ki/ka/foreach_index.hpp>
#include <ki/ka/group.hpp>
#include <ki/intended_race.hpp>
#include <ki/ka/kernel.hpp>
#include <ki/ka/ndrange.hpp>
#include <ki/ka/sizes.hpp>
