// The CUDA backend (nvcc only): ki::cuda::backend.
#pragma once
#include <ki/ki.hpp>
#include <ki/cuda/backend.hpp>
