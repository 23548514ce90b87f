// The simd_cpu backend (the fast CPU backend).
#pragma once
#include <ki/simd_cpu/backend.hpp>
