#!/usr/bin/env python3
"""Writes the text seeds of fuzz/corpus/ (configs, CLI argument lists, group ids).

Run from the repository root: python3 fuzz/make_seeds.py. The binary targets' seeds
(plan_fuzz, row_bytes_fuzz) are inputs kept from fuzzing runs (libFuzzer -merge=1), and
crash-* / regression-* files are inputs that once failed (each also has a test in tests/).
"""
import copy
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"


def write(target, name, data):
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# ---- config_json_fuzz: the real configs and one variant per loader rule ----
flash = json.loads((root / "tests/data/deepseek-v4-flash.config.json").read_text())
pro = json.loads((root / "tests/data/deepseek-v4-pro.config.json").read_text())
write("config_json_fuzz", "flash.json", (root / "tests/data/deepseek-v4-flash.config.json").read_text())
write("config_json_fuzz", "pro.json", (root / "tests/data/deepseek-v4-pro.config.json").read_text())


def variant(name, edit, base=flash):
    c = copy.deepcopy(base)
    edit(c)
    write("config_json_fuzz", name + ".json", json.dumps(c, separators=(",", ":")))


def keep_only(*keys):
    def edit(c):
        for k in list(c):
            if k not in keys:
                del c[k]
    return edit


core = ("model_type", "num_hidden_layers", "num_nextn_predict_layers", "head_dim", "qk_rope_head_dim",
        "index_head_dim", "sliding_window", "max_position_embeddings", "compress_ratios")
variant("minimal", keep_only(*core))
variant("v32", lambda c: c.update(model_type="deepseek_v32"))
variant("ratio8", lambda c: c["compress_ratios"].__setitem__(5, 8))
variant("short_ratios", lambda c: c.update(compress_ratios=c["compress_ratios"][:10]))
variant("draft_padding", lambda c: c.update(compress_ratios=c["compress_ratios"] + [0, 0, 0]))
variant("zero_dim", lambda c: c.update(head_dim=0))
variant("negative_dim", lambda c: c.update(sliding_window=-128))
variant("float_dim", lambda c: c.update(head_dim=512.0, index_head_dim=128.5))
variant("string_dim", lambda c: c.update(num_hidden_layers="43"))
variant("huge_context", lambda c: c.update(max_position_embeddings=2**63 - 1))
variant("no_mtp", lambda c: (c.pop("num_nextn_predict_layers", None), c.update(compress_ratios=c["compress_ratios"][:43])))


def layer_types(c):
    kinds = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
    c["layer_types"] = [kinds[r] for r in c["compress_ratios"][: c["num_hidden_layers"]]]
    c["compress_rates"] = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
    del c["compress_ratios"]
    c["partial_rotary_factor"] = c.pop("qk_rope_head_dim") / c["head_dim"]


variant("layer_types", layer_types)
variant("text_config", lambda c: c.update(text_config={k: c.pop(k) for k in core[1:] if k in c}))
variant("pro_layer_types", layer_types, pro)
# Issue 42: the weight fields (FP8 experts, a huge vocabulary, a missing field) and the refusals.
variant("fp8_experts", lambda c: c.update(expert_dtype="fp8"))
variant("huge_vocab", lambda c: c.update(vocab_size=2**31 - 1, hidden_size=2**31 - 1))
variant("weights_partial", lambda c: c.pop("o_groups"))
variant("kv_heads_2", lambda c: c.update(num_key_value_heads=2))
write("config_json_fuzz", "duplicate_key.json",
      json.dumps(flash, separators=(",", ":"))[:-1] + ',"sliding_window":256}')

# V4.1: the released config (text_config nested), flat, and one variant per validator.
v41 = json.loads((root / "tests/data/deepseek-v4.1-flash.config.json").read_text())
write("config_json_fuzz", "v41.json", (root / "tests/data/deepseek-v4.1-flash.config.json").read_text())


def v41_variant(name, edit):
    c = copy.deepcopy(v41)
    edit(c["text_config"])
    write("config_json_fuzz", name + ".json", json.dumps(c, separators=(",", ":")))


write("config_json_fuzz", "v41_flat.json", json.dumps(dict(v41["text_config"], model_type="deepseek_v41")))
v41_variant("v41_ratio4", lambda t: t["compress_ratios"].__setitem__(7, 4))
v41_variant("v41_draft_ratio", lambda t: t["compress_ratios"].__setitem__(41, 1))
v41_variant("v41_owner_swa", lambda t: t.update(kv_source_layer_ids=[0, 8, 14, 20]))
v41_variant("v41_no_owner", lambda t: t.update(kv_source_layer_ids=[8, 14, 20]))
v41_variant("v41_owners_2_8_20", lambda t: t.update(kv_source_layer_ids=[2, 8, 20]))
v41_variant("v41_index_swa", lambda t: t.update(index_source_layer_ids=[1, 2]))

# ---- group_id_fuzz: every id of the seed, and near misses ----
for i, gid in enumerate(["v4.swa_kv", "v4.c4a.compressor_state", "v4.c4a.compressed_kv", "v4.c128a.compressor_state",
                         "v4.c128a.compressed_kv", "v4.c4a.indexer_compressor_state", "v4.c8a.compressed_kv",
                         "v4.c04a.compressed_kv", "v4.c+4a.compressor_state", "v4.ca.compressed_kv"]):
    write("group_id_fuzz", f"id{i}", gid)
for name, gid in [("v32_mla_kv", "v3.2.mla_kv"), ("v32_indexer_k", "v3.2.indexer_k"), ("v41_swa", "v4.1.swa"),
                  ("v41_global_r2", "v4.1.global_r2"), ("v41_global_r1", "v4.1.global_r1"),
                  ("v41_state_r2", "v4.1.compressor_state_r2"), ("v41_global_r3", "v4.1.global_r3")]:
    write("group_id_fuzz", name, gid)

# ---- cli_fuzz: argument lists, one argument per line; 0xFF first = fuzzed planner_args ----
for i, args in enumerate([[], ["--preset", "pro", "--json"], ["--config", "flash", "--memory-gib", "80"],
                          ["--context", "1000", "--requests", "8", "--indexer", "mxfp4", "--tokens-per-step", "2",
                           "--prefill-chunk", "4096", "--no-mtp"],
                          ["--context", "-5"], ["--bogus"], ["--help"], ["--memory-gib", "1e300"],
                          ["--config=pro", "--context", "1099511627776", "--requests", "1073741824"],
                          ["--preset", "flash", "--memory-gib", "141", "--json", "--requests", "4"],
                          ["--preset", "v4.1-flash", "--format-set", "v4", "--context", "4096", "--simulate"],
                          ["--preset", "v4.1-flash", "--pp", "4", "--tokens-per-step", "6", "--json"]]):
    write("cli_fuzz", f"args{i}", "\n".join(args))
for i, args in enumerate([["--engine", "sglang", "--memory-gib", "64", "--context", "131072", "--json"],
                          ["--engine", "sglang", "--preset", "pro", "--swa-full-tokens-ratio", "0.02", "--requests",
                           "300", "--memory-gib", "96", "--dp", "2"]]):
    write("cli_fuzz", f"sglang{i}", "\n".join(args))
# --svg: cli_fuzz replaces the value by one of ten targets in its own folder (the byte sum mod 10:
# "0".."9" give each once): new, regular, symlink, FIFO, directory, loop, dangling, missing folder,
# .png, upper case; the last seed uses the --svg= form.
for k in range(10):
    write("cli_fuzz", f"svg{k}", "\n".join(["--memory-gib", "80", "--svg", str(k)]))
write("cli_fuzz", "svg_eq", "\n".join(["--memory-gib", "80", "--svg=3"]))
# The budget chain from a GPU (issue 42).
for i, args in enumerate([["--preset", "pro", "--gpu", "h200", "--tp", "8", "--context", "1048576"],
                          ["--gpu", "h200"], ["--gpu", "b200", "--engine", "sglang", "--mem-fraction-static", "0.85"],
                          ["--gpu", "h200", "--tp", "8", "--ep", "8", "--gpu-memory-utilization", "0.9", "--json"],
                          ["--gpu", "h200", "--kv-cache-memory-bytes", "20000000000", "--require-fit"]]):
    write("cli_fuzz", f"budget{i}", "\n".join(args))
write("cli_fuzz", "struct0", b"\xff" + bytes(range(64)))
