#!/usr/bin/env python3
"""Write a GGUF model out as a Hugging Face checkpoint, the reverse of
llama.cpp's convert_hf_to_gguf.py, so that tests and benchmarks have real
checkpoints of models we have as GGUF (this machine reaches no model hub):

  gguf-to-hf.py MODEL.gguf OUTDIR [--dtype f32|f16|bf16] [--shards N] [--f32-norms]

config.json, generation_config.json, tokenizer.json, tokenizer_config.json
(with the chat template) and model.safetensors, or N shards named by
model.safetensors.index.json; with --f32-norms the norms and biases stay
f32 (so the same weights as the GGUF's, for exact comparisons). Quantised tensors are dequantised with gguf-py
(llama.cpp's own reader); llama's Q/K rows are put back from the converter's
interleaved RoPE pairs into the checkpoint's halves. Needs numpy and the
gguf package (the test virtual environment has both)."""
import argparse
import json
import os
import struct
import sys

import numpy as np
import gguf
from gguf import quants

# the pre-tokenizers skipper (core/tokenizer/tokenizer_json.c) and
# transformers recognise, by llama.cpp's tokenizer.ggml.pre names
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
            r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
             r"\s*[\r\n]+|\s+(?!\S)|\s+")
BYTELEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def pre_tokenizer(pre):
    if pre == "smollm":
        return {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, BYTELEVEL]}
    if pre in ("qwen2", "llama-bpe", "llama3"):
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_RE if pre == "qwen2" else LLAMA3_RE},
             "behavior": "Isolated", "invert": False},
            dict(BYTELEVEL, use_regex=False)]}
    if pre in ("gpt2", "gpt-2", "default", None):
        return BYTELEVEL
    sys.exit(f"gguf-to-hf: pre-tokenizer {pre!r} is not one this script writes")


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    return f.parts[f.data[0]].tolist()[0]


def unpermute(w, n_head):
    """Inverse of convert_hf_to_gguf.py's LlamaModel.permute."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def to_bytes(a, dtype):
    a = np.ascontiguousarray(a, dtype=np.float32)
    if dtype == "f32":
        return a.tobytes(), "F32"
    if dtype == "f16":
        return a.astype(np.float16).tobytes(), "F16"
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even, as torch does
    return u.astype(np.uint16).tobytes(), "BF16"


def write_safetensors(path, tensors):
    """tensors: [(name, shape, dtype_str, bytes)] in file order."""
    header, off = {}, 0
    for name, shape, dt, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for t in tensors:
            f.write(t[3])
    os.replace(path + ".tmp", path)


HF_LAYER = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
            "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
            "attn_output.weight": "self_attn.o_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
            "attn_k.bias": "self_attn.k_proj.bias", "attn_v.bias": "self_attn.v_proj.bias",
            "attn_q_norm.weight": "self_attn.q_norm.weight", "attn_k_norm.weight": "self_attn.k_norm.weight",
            "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
            "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}
HF_TOP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
          "output.weight": "lm_head.weight"}
CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--dtype", default="bf16", choices=["f32", "f16", "bf16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--f32-norms", action="store_true")
    a = ap.parse_args()
    r = gguf.GGUFReader(a.model)
    arch = field(r, "general.architecture")
    if arch not in CLASSES:
        sys.exit(f"gguf-to-hf: architecture {arch!r} is not llama, qwen2 or qwen3")
    k = lambda key, d=None: field(r, f"{arch}.{key}", d)  # noqa: E731
    n_head, n_embd = k("attention.head_count"), k("embedding_length")
    n_head_kv = k("attention.head_count_kv", n_head)
    head_dim = k("attention.key_length", n_embd // n_head)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type", [1] * len(tokens))
    if field(r, "tokenizer.ggml.model") != "gpt2":
        sys.exit("gguf-to-hf: only byte-level BPE vocabularies (tokenizer.ggml.model gpt2) are written")
    if "rope_freqs.weight" in [t.name for t in r.tensors] and k("rope.scaling.type") is None:
        sys.exit("gguf-to-hf: a rope_freqs tensor without the scaling keys cannot be written as rope_scaling")

    os.makedirs(a.out, exist_ok=True)
    tensors, vocab_rows = [], None
    for t in r.tensors:
        if t.name == "rope_freqs.weight":
            continue
        shape = [int(x) for x in reversed(t.shape.tolist())]  # row-major, contiguous last
        x = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        if arch == "llama" and t.name.endswith("attn_q.weight"):
            x = unpermute(x, n_head)
        elif arch == "llama" and t.name.endswith("attn_k.weight"):
            x = unpermute(x, n_head_kv)
        if t.name.startswith("blk."):
            _, layer, rest = t.name.split(".", 2)
            name = f"model.layers.{layer}.{HF_LAYER[rest]}"
        else:
            name = HF_TOP[t.name]
        if t.name == "token_embd.weight":
            vocab_rows = shape[0]
        data, dt = to_bytes(x, "f32" if a.f32_norms and x.ndim == 1 else a.dtype)
        tensors.append((name, shape, dt, data))
    tied = "lm_head.weight" not in [t[0] for t in tensors]
    tensors.sort(key=lambda t: t[0])

    if a.shards <= 1:
        write_safetensors(os.path.join(a.out, "model.safetensors"), tensors)
    else:
        per = -(-len(tensors) // a.shards)
        weight_map, total = {}, 0
        for s in range(a.shards):
            part = tensors[s * per:(s + 1) * per]
            fname = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
            write_safetensors(os.path.join(a.out, fname), part)
            for t in part:
                weight_map[t[0]] = fname
                total += len(t[3])
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)

    bos, eos = field(r, "tokenizer.ggml.bos_token_id"), field(r, "tokenizer.ggml.eos_token_id")
    cfg = {"architectures": [CLASSES[arch]], "model_type": arch, "hidden_size": n_embd,
           "intermediate_size": k("feed_forward_length"), "num_hidden_layers": k("block_count"),
           "num_attention_heads": n_head, "num_key_value_heads": n_head_kv, "head_dim": head_dim,
           "max_position_embeddings": k("context_length", 2048),
           "rms_norm_eps": float(np.float32(k("attention.layer_norm_rms_epsilon", 1e-5))),
           "rope_theta": float(np.float32(k("rope.freq_base", 10000.0))), "vocab_size": vocab_rows,
           "tie_word_embeddings": tied, "hidden_act": "silu", "attention_bias": arch == "qwen2",
           "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[a.dtype],
           "bos_token_id": bos, "eos_token_id": eos, "rope_scaling": None}
    if arch == "qwen2":
        cfg.update(use_sliding_window=False, sliding_window=cfg["max_position_embeddings"],
                   max_window_layers=cfg["num_hidden_layers"])
    if k("rope.scaling.type") not in (None, "none"):
        cfg["rope_scaling"] = {"rope_type": k("rope.scaling.type"), "factor": k("rope.scaling.factor", 1.0),
                               "low_freq_factor": k("rope.scaling.low_freq_factor", 1.0),
                               "high_freq_factor": k("rope.scaling.high_freq_factor", 4.0),
                               "original_max_position_embeddings": k("rope.scaling.original_context_length")}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": bos, "eos_token_id": eos, "do_sample": False}, f, indent=2)

    merges = field(r, "tokenizer.ggml.merges", [])
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 3]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": pre_tokenizer(field(r, "tokenizer.ggml.pre")), "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges}}
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    tc = {"add_bos_token": bool(field(r, "tokenizer.ggml.add_bos_token", False)), "add_eos_token": False,
          "bos_token": tokens[bos] if bos is not None else None, "eos_token": tokens[eos] if eos is not None else None,
          "model_max_length": cfg["max_position_embeddings"], "tokenizer_class": "PreTrainedTokenizerFast",
          "clean_up_tokenization_spaces": False}
    pad = field(r, "tokenizer.ggml.padding_token_id")
    if pad is not None:
        tc["pad_token"] = tokens[pad]
    if field(r, "tokenizer.chat_template"):
        tc["chat_template"] = field(r, "tokenizer.chat_template")
    with open(os.path.join(a.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tc, f, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()
