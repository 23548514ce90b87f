// The reference backend (the oracle).
#pragma once
#include <ki/reference/backend.hpp>
#include <ki/reference/events.hpp>
#include <ki/reference/explore.hpp>
#include <ki/reference/report.hpp>
#include <ki/reference/trace.hpp>
