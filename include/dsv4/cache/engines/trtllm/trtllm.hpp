// dsv4-cache: TensorRT-LLM as a registered engine: its value (engine.hpp), its geometry
// (pools.hpp), its StorageManager sizing (sizing.hpp), its admission rule (policy.hpp), its
// startup lines (startup.hpp), its plan (plan.hpp) and its report (report.hpp).
#pragma once

#include "dsv4/cache/engines/trtllm/engine.hpp"
#include "dsv4/cache/engines/trtllm/plan.hpp"
#include "dsv4/cache/engines/trtllm/policy.hpp"
#include "dsv4/cache/engines/trtllm/pools.hpp"
#include "dsv4/cache/engines/trtllm/report.hpp"
#include "dsv4/cache/engines/trtllm/sizing.hpp"
#include "dsv4/cache/engines/trtllm/startup.hpp"
