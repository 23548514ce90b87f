// The CUDA backend (nvcc only).
#pragma once
#include <ki/cuda/backend.hpp>
