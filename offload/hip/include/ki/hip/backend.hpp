// ki::hip::backend: the offload implementation (offload/common) with the HIP runtime.
// Compiled by hipcc (or clang++ -x hip) with -std=c++20.
#pragma once
#include <ki/hip/api.hpp>
#include <ki/offload/backend.hpp>
