// The reference backend (the oracle).
#pragma once
#include <ki/reference/backend.hpp>
