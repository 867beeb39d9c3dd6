#!/usr/bin/env python3
"""Broken Hugging Face checkpoints: each is refused by `skipper info` and
`skipper generate` with a non-zero exit and a message naming the file and
what is wrong in it, never a crash. Prints TAP. Standard library only.

  hf-bad.py SKIPPER TMPDIR"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys

from tap import done, ok

skipper, tmp = sys.argv[1:3]
H, FF, HEADS, KV, LAYERS, VOCAB = 64, 128, 4, 2, 2, 300
HD = H // HEADS



def f32(count, value=0.01):
    return struct.pack(f"<{count}f", *([value] * count))


def tensors():
    """A valid tiny llama's tensors: name -> (shape, F32 bytes)."""
    t = {"model.embed_tokens.weight": [VOCAB, H], "model.norm.weight": [H], "lm_head.weight": [VOCAB, H]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
                  p + "self_attn.q_proj.weight": [HEADS * HD, H], p + "self_attn.k_proj.weight": [KV * HD, H],
                  p + "self_attn.v_proj.weight": [KV * HD, H], p + "self_attn.o_proj.weight": [H, HEADS * HD],
                  p + "mlp.gate_proj.weight": [FF, H], p + "mlp.up_proj.weight": [FF, H],
                  p + "mlp.down_proj.weight": [H, FF]})
    out = {}
    for name, shape in t.items():
        count = 1
        for d in shape:
            count *= d
        out[name] = (shape, f32(count, 1.0 if "norm" in name else 0.01))
    return out


def st_bytes(ts, header_edit=None, dtype="F32"):
    header, off, blobs = {}, 0, []
    for name, (shape, data) in ts.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    if header_edit:
        header_edit(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": FF,
          "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV,
          "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": VOCAB,
          "tie_word_embeddings": False, "hidden_act": "silu"}


def byte_tokens():
    """GPT-2's byte -> printable character table: the 256 pieces of a
    byte-level BPE vocabulary without merges."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra, out = 0, {}
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


TOKENIZER = json.dumps({
    "added_tokens": [{"id": 256, "content": "<|endoftext|>", "special": True}],
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {**{t: i for i, t in enumerate(byte_tokens())}, "<|endoftext|>": 256},
              "merges": []}})


def checkpoint(name, config=None, weights=None, files=None, tokenizer=True):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    if tokenizer:
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            f.write(TOKENIZER)
    if config is not False:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config or CONFIG))
    if weights is not None:
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(weights)
    for fname, data in (files or {}).items():
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    return d


def refused(d, *needles, cmd="info"):
    args = [skipper, cmd, d] if cmd == "info" else [skipper, "generate", "-m", d, "-n", "4", "-p", "hi"]
    try:
        r = subprocess.run(args, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    err = r.stderr.decode(errors="replace")
    good = r.returncode not in (0,) and r.returncode > 0 and -r.returncode not in (signal.SIGSEGV, signal.SIGABRT)
    return good and all(x in err for x in needles), f"exit {r.returncode}: {err.strip()}"


def case(what, d, *needles, cmd="info"):
    good, detail = refused(d, *needles, cmd=cmd)
    ok(good, f"{what}: refused" + (f" naming {', '.join(needles)}" if needles else ""), detail)


good = st_bytes(tensors())
d = checkpoint("valid", weights=good)
r = subprocess.run([skipper, "info", d], capture_output=True)
ok(r.returncode == 0, "the valid base checkpoint loads (every case below breaks one thing)", r.stderr.decode())
r = subprocess.run([skipper, "generate", "-m", d, "-n", "4", "--template", "none", "-p", "hi"], capture_output=True)
ok(r.returncode == 0, "and generates", r.stderr.decode())

case("a directory without config.json", checkpoint("noconfig", config=False, weights=good), "config.json")
case("config.json not JSON", checkpoint("badjson", config='{"model_type": "llama",', weights=good),
     "config.json", "line 1")
case("config.json a JSON list", checkpoint("listjson", config="[1, 2]", weights=good), "config.json", "JSON object")
case("model_type mistral", checkpoint("mistral", config=dict(CONFIG, model_type="mistral"), weights=good),
     "config.json", "mistral")
case("a classification head", checkpoint("cls", config=dict(CONFIG, architectures=["LlamaForSequenceClassification"]),
                                         weights=good), "ForCausalLM")
c = dict(CONFIG)
del c["num_hidden_layers"]
case("num_hidden_layers missing", checkpoint("nolayers", config=c, weights=good), "config.json", "num_hidden_layers")
case("hidden_size a string", checkpoint("strsize", config=dict(CONFIG, hidden_size="64"), weights=good),
     "hidden_size")
case("heads not dividing the width", checkpoint("heads", config=dict(CONFIG, num_attention_heads=3), weights=good),
     "inconsistent")
case("rope_scaling yarn", checkpoint("yarn", config=dict(CONFIG, rope_scaling={"rope_type": "yarn", "factor": 4.0}),
                                      weights=good), "rope_scaling", "yarn")
case("sliding window", checkpoint("swa", config=dict(CONFIG, use_sliding_window=True), weights=good),
     "use_sliding_window")
case("gelu", checkpoint("gelu", config=dict(CONFIG, hidden_act="gelu"), weights=good), "hidden_act")
case("no weights at all", checkpoint("noweights"), "model.safetensors")
case("an empty model.safetensors", checkpoint("empty", weights=b""), "model.safetensors", "too short")
case("header length past the file", checkpoint("hlen", weights=struct.pack("<Q", 1 << 40) + b"{}"),
     "model.safetensors", "header length")
case("header not JSON", checkpoint("hjunk", weights=struct.pack("<Q", 4) + b"{{{{"), "model.safetensors", "header")
case("a truncated file", checkpoint("trunc", weights=good[:len(good) // 2]), "model.safetensors", "data_offsets")
case("dtype I64", checkpoint("i64", weights=st_bytes(tensors(), lambda h: h["model.norm.weight"].update(dtype="I64"))),
     "model.norm.weight", "I64")
case("shape and bytes disagree",
     checkpoint("shape", weights=st_bytes(tensors(), lambda h: h["model.norm.weight"].update(shape=[H + 1]))),
     "model.norm.weight", "bytes")


def overlap(h):
    h["model.norm.weight"]["data_offsets"] = list(h["model.embed_tokens.weight"]["data_offsets"])
    h["model.norm.weight"]["data_offsets"][1] = h["model.norm.weight"]["data_offsets"][0] + H * 4


case("two tensors on the same bytes", checkpoint("overlap", weights=st_bytes(tensors(), overlap)), "overlap")
case("a negative offset",
     checkpoint("negoff", weights=st_bytes(tensors(), lambda h: h["model.norm.weight"].update(data_offsets=[-4, 252]))),
     "model.norm.weight", "data_offsets")
ts = tensors()
ts["model.layers.0.mlp.experts.0.w1.weight"] = ([4], f32(4))
case("a tensor no llama has", checkpoint("unknown", weights=st_bytes(ts)), "model.layers.0.mlp.experts.0.w1.weight")
ts = tensors()
ts["model.layers.7.mlp.up_proj.weight"] = ts["model.layers.0.mlp.up_proj.weight"]
case("a layer past num_hidden_layers", checkpoint("layer7", weights=st_bytes(ts)), "model.layers.7")
ts = tensors()
del ts["model.layers.1.self_attn.q_proj.weight"]
case("a missing projection", checkpoint("missing", weights=st_bytes(ts)), "model.layers.1.self_attn.q_proj.weight",
     "missing")
ts = tensors()
ts["model.layers.0.self_attn.k_proj.weight"] = ([HEADS * HD, H], f32(HEADS * HD * H))
case("a projection of the wrong shape", checkpoint("kshape", weights=st_bytes(ts)),
     "model.layers.0.self_attn.k_proj.weight", f"[{HEADS * HD}, {H}]", f"[{KV * HD}, {H}]")
ts = tensors()
ts["model.layers.0.self_attn.q_proj.bias"] = ([HEADS * HD], f32(HEADS * HD))
case("a bias llama does not have", checkpoint("bias", weights=st_bytes(ts)), "model.layers.0.self_attn.q_proj.bias")
ts = tensors()
ts["model.norm.weight"] = ([H], struct.pack("<f", float("nan")) + f32(H - 1))
case("a NaN in a norm", checkpoint("nan", weights=st_bytes(ts)), "model.norm.weight", "non-finite")
ts = tensors()
del ts["lm_head.weight"]
case("untied without lm_head", checkpoint("nohead", weights=st_bytes(ts)), "lm_head.weight")
case("vocab_size not the embedding's rows", checkpoint("vocab", config=dict(CONFIG, vocab_size=VOCAB + 2),
                                                       weights=good), "model.embed_tokens.weight")

# shards
ts = tensors()
half = dict(list(ts.items())[:5]), dict(list(ts.items())[5:])
index = {"weight_map": {**{k: "a.safetensors" for k in half[0]}, **{k: "b.safetensors" for k in half[1]}}}
files = {"a.safetensors": st_bytes(half[0]), "b.safetensors": st_bytes(half[1])}
d = checkpoint("shards", files=dict(files, **{"model.safetensors.index.json": json.dumps(index)}))
r = subprocess.run([skipper, "info", d], capture_output=True)
ok(r.returncode == 0, "two shards through the index load", r.stderr.decode())
bad = json.loads(json.dumps(index))
bad["weight_map"]["model.norm.weight"] = "../../etc/passwd.safetensors"
case("an index naming a file outside", checkpoint("escape", files=dict(files, **{
    "model.safetensors.index.json": json.dumps(bad)})), "model.safetensors.index.json", "model.norm.weight")
bad = json.loads(json.dumps(index))
bad["weight_map"]["model.norm.weight"] = "a.safetensors" if "model.norm.weight" in half[1] else "b.safetensors"
case("an index putting a tensor in the wrong shard", checkpoint("wrongshard", files=dict(files, **{
    "model.safetensors.index.json": json.dumps(bad)})), "model.norm.weight", "index")
case("an index naming a shard that is not there", checkpoint("noshard", files={
    "a.safetensors": files["a.safetensors"], "model.safetensors.index.json": json.dumps(index)}), "b.safetensors")
case("an index without weight_map", checkpoint("nomap", files=dict(files, **{
    "model.safetensors.index.json": "{}"})), "weight_map")
dup = {"a.safetensors": files["a.safetensors"], "b.safetensors": st_bytes(ts)}
idx = {"weight_map": {**{k: "b.safetensors" for k in ts}, **{k: "a.safetensors" for k in half[0]}}}
case("a tensor in two shards", checkpoint("dup", files=dict(dup, **{
    "model.safetensors.index.json": json.dumps(idx)})), "in another file")

# a FIFO where the weights should be: refused at once, not waited on
d = checkpoint("fifo")
os.mkfifo(os.path.join(d, "model.safetensors"))
case("a FIFO as model.safetensors", d, "model.safetensors")

# the tokenizer is read by generate (and info)
d = checkpoint("notok", weights=good, tokenizer=False)
case("no tokenizer.json", d, "tokenizer.json", cmd="generate")
case("no tokenizer.json (info)", d, "tokenizer.json")
d = checkpoint("bigtok", config=dict(CONFIG, vocab_size=200), weights=st_bytes({
    k: ([200, H], f32(200 * H)) if k in ("model.embed_tokens.weight", "lm_head.weight") else v
    for k, v in tensors().items()}))
case("a tokenizer with more tokens than the embedding has rows", d, "tokenizer.json", "vocab_size", cmd="generate")
d = checkpoint("badtok", weights=good, files={"tokenizer.json": '{"model": {"type": "Unigram"}}'}, tokenizer=False)
case("a Unigram tokenizer.json", d, "tokenizer.json", cmd="generate")

# a chat template skipper does not know: a warning naming the way out, the
# prompt raw; --template takes over
d = checkpoint("tmpl", weights=good, files={"tokenizer_config.json": json.dumps({"chat_template": "{{ messages }}"})})
r = subprocess.run([skipper, "generate", "-m", d, "-n", "4", "-p", "hi"], capture_output=True)
ok(r.returncode == 0 and b"chat template is none skipper knows" in r.stderr and b"--template" in r.stderr,
   "an unknown chat template: a warning naming --template, and the prompt raw", r.stderr.decode())
r = subprocess.run([skipper, "generate", "-m", d, "-n", "4", "--template", "chatml", "-p", "hi"], capture_output=True)
ok(r.returncode == 0 and b"chat template" not in r.stderr, "--template chatml: no warning", r.stderr.decode())

shutil.rmtree(tmp, ignore_errors=True)
done()
