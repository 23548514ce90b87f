// ki: write GPU-style kernels once; run them on the reference oracle, CPU and GPU backends.
// The umbrella header: the portable API only (kernels, device functions, the host API). A
// program also includes the backends it uses: <ki/reference.hpp>, <ki/simd_cpu.hpp>,
// <ki/cuda.hpp>, <ki/hip.hpp>; a kernel needs none of them.
#pragma once
#include <ki/argconvert.hpp>
#include <ki/atomic.hpp>
#include <ki/backend.hpp>
#include <ki/const_span.hpp>
#include <ki/barrier.hpp>
#include <ki/device.hpp>
#include <ki/dims.hpp>
#include <ki/errors.hpp>
#include <ki/indices.hpp>
#include <ki/intended_race.hpp>
#include <ki/launch.hpp>
#include <ki/local_memory.hpp>
#include <ki/macros.hpp>
#include <ki/memory.hpp>
#include <ki/print.hpp>
#include <ki/quad.hpp>
#include <ki/queries.hpp>
#include <ki/queue.hpp>
#include <ki/rand.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#include <ki/sub_group.hpp>
#include <ki/sub_group_matrix.hpp>
#include <ki/target.hpp>
#include <ki/xyz.hpp>
