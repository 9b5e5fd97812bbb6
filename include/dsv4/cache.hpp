// dsv4-cache umbrella header: the whole core (formats, layouts, plan, codecs, layout contract).
// Standard library only.
// Formatters (dsv4/cache/format.hpp, fmt) and config.json loading (dsv4/cache/config_json.hpp,
// nlohmann_json) are separate so that the core needs neither.
#pragma once

#include "dsv4/cache/alloc_sim.hpp"
#include "dsv4/cache/arena_layout.hpp"
#include "dsv4/cache/checked.hpp"
#include "dsv4/cache/chunk_codec.hpp"
#include "dsv4/cache/descriptor.hpp"
#include "dsv4/cache/engines/registry.hpp"
#include "dsv4/cache/engines/sglang.hpp"
#include "dsv4/cache/engines/sglang_sim.hpp"
#include "dsv4/cache/fast_rows.hpp"
#include "dsv4/cache/formats/registry.hpp"
#include "dsv4/cache/gpu_catalog.hpp"
#include "dsv4/cache/group_spec.hpp"
#include "dsv4/cache/host_codec.hpp"
#include "dsv4/cache/kv_budget.hpp"
#include "dsv4/cache/layer_schedule.hpp"
#include "dsv4/cache/layer_schema.hpp"
#include "dsv4/cache/memory_plan.hpp"
#include "dsv4/cache/model.hpp"
#include "dsv4/cache/parallel.hpp"
#include "dsv4/cache/platform.hpp"
#include "dsv4/cache/policy.hpp"
#include "dsv4/cache/row_codec.hpp"
#include "dsv4/cache/row_format.hpp"
#include "dsv4/cache/scalar_codec.hpp"
#include "dsv4/cache/slot_work.hpp"
#include "dsv4/cache/weights.hpp"
#include "dsv4/cache/xxh64.hpp"
