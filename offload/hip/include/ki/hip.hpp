// The HIP backend (hipcc only): ki::hip::backend.
#pragma once
#include <ki/ki.hpp>
#include <ki/hip/backend.hpp>
