// ki::cuda::backend: the offload implementation (offload/common) with the CUDA runtime.
// Compiled by nvcc (-std=c++20 --extended-lambda --expt-relaxed-constexpr, which ki::cuda adds).
#pragma once
#include <ki/cuda/api.hpp>
#include <ki/offload/backend.hpp>
