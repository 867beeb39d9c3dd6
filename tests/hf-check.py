#!/usr/bin/env python3
"""Hugging Face checkpoints, end to end. Prints TAP.

  hf-check.py TOP_BUILDDIR TOP_SRCDIR TMPDIR [SMOLLM2.gguf]

Checkpoints are written by tests/gguf-to-hf.py from generated models of each
architecture (llama, whose Q/K rows the GGUF converter had permuted, qwen2
with its biases, qwen3 with its Q/K norms, llama with llama3 RoPE scaling
and tied embeddings) and from the real SmolLM2-135M. Checked:
  - logits against transformers' on the same checkpoints (recorded by
    tests/ref/hf-ref.py in tests/data/hf-ref.json: this machine has no
    torch), and against the GGUF they came from (F32, BF16; and BF16/F32
    checkpoints quantised on load against the GGUF quantised by the
    generator: bitwise where no rows were permuted);
  - `skipper generate` on the directory: the same text as on the GGUF,
    through tokenizer.json and the chat template of tokenizer_config.json;
    every policy's output identical to plain decoding's;
  - SmolLM2 as a sharded BF16 checkpoint: transformers' greedy
    continuation of a chat prompt it tokenized itself, token for token
    (but near ties), and the same under [model] quantize = q8_0 for the
    first tokens.
HF_CHECK_KEEP=DIR keeps the checkpoints there (to record the reference)."""
import hashlib
import json
import os
import subprocess
import sys

from tap import done, ok

try:
    import numpy as np
    import gguf  # noqa: F401 - gguf-to-hf.py needs it
except Exception as e:  # noqa: BLE001 - any import problem means: skip
    print(f"1..0 # SKIP numpy and the gguf package are needed ({e})")
    sys.exit(0)

build, src, tmp = sys.argv[1:4]
smollm2 = sys.argv[4] if len(sys.argv) > 4 else ""
keep = os.environ.get("HF_CHECK_KEEP")
work = keep or tmp
SKIPPER = os.path.join(build, "skipper")
NEAR_TIE = 0.05



def run(*args, env=None):
    return subprocess.run(args, capture_output=True, check=False, env=env)


def convert(gg, out, *opts):
    r = run(sys.executable, os.path.join(src, "tests/gguf-to-hf.py"), gg, out, *opts)
    if r.returncode:
        print(f"Bail out! gguf-to-hf.py {gg}: {r.stderr.decode()}")
        sys.exit(1)
    return out


def gen(name, *opts):
    path = os.path.join(work, name + ".gguf")
    r = run(os.path.join(build, "tests/gen-model"), "--out", path, *opts)
    if r.returncode:
        print(f"Bail out! gen-model {opts}: {r.stderr.decode()}")
        sys.exit(1)
    return path


def logits(model, tokens, quant="none"):
    r = run(os.path.join(build, "tests/hf-logits"), model, quant, ",".join(map(str, tokens)))
    if r.returncode:
        return None, r.stderr.decode()
    return np.frombuffer(r.stdout, dtype=np.float32).reshape(len(tokens), -1), ""


def generate(model, *opts):
    env = dict(os.environ, SKIPPER_CACHE_DIR=os.path.join(tmp, "cache"), SKIPPER_SYSTEM_CONFIG="/nonexistent")
    r = run(SKIPPER, "generate", "-m", model, "-t", "2", *opts, env=env)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


try:
    ref = json.load(open(os.path.join(src, "tests/data/hf-ref.json")))
except FileNotFoundError:
    if not keep:
        raise
    ref = {}  # HF_CHECK_KEEP: writing the checkpoints to record it
VARIANTS = {  # name -> gen-model options (tests/ref/hf-ref.py recorded these checkpoints)
    "llama": ["--arch", "llama"],
    "qwen2": ["--arch", "qwen2"],
    "qwen3": ["--arch", "qwen3"],
    "llama3-tied": ["--arch", "llama", "--rope-scaling", "llama3-keys", "--tied"],
}
PROMPT = "The quick brown fox jumps over the lazy dog 42 times."

for name, opts in VARIANTS.items():
    g32 = gen(name, "--dtype", "f32", *opts)
    d32 = convert(g32, os.path.join(work, name), "--dtype", "f32", "--shards", "2" if name == "qwen2" else "1")
    if name not in ref:
        continue
    toks = ref[name]["tokens"]
    L, why = logits(d32, toks)
    if not ok(L is not None, f"{name}: the F32 checkpoint loads", why):
        continue
    R = np.array(ref[name]["logits"], dtype=np.float32)
    diff = float(np.abs(L - R).max())
    ok(diff < 0.02 and (L.argmax(1) == R.argmax(1)).all(),
       f"{name}: logits at all {len(toks)} positions within 0.02 of transformers' (max |diff| {diff:.4f})")
    G, _ = logits(g32, toks)
    diff = float(np.abs(L - G).max())
    ok(diff < 1e-3, f"{name}: the same logits as the GGUF it came from (max |diff| {diff:.2e})")

    # BF16 (norms kept f32, so the very weights of the BF16 GGUF)
    gbf = gen(name + "-bf16", "--dtype", "bf16", *opts)
    dbf = convert(gbf, os.path.join(work, name + "-bf16"), "--dtype", "bf16", "--f32-norms")
    Lb, why = logits(dbf, toks)
    Gb, _ = logits(gbf, toks)
    ok(Lb is not None and float(np.abs(Lb - Gb).max()) < 1e-3,
       f"{name}: BF16 checkpoint = BF16 GGUF" + (f" (max |diff| {float(np.abs(Lb - Gb).max()):.2e})" if Lb is not None else ""),
       why)
    # quantised on load: the generator quantises the same F32 weights with the same code
    for q in ("q8_0", "q4_1"):
        gq = gen(name + "-" + q, "--dtype", q, *opts)
        Lq, why = logits(d32, toks, q)
        Gq, _ = logits(gq, toks)
        if Lq is None:
            ok(False, f"{name}: quantize = {q} loads", why)
            continue
        dq = float(np.abs(Lq - Gq).max())
        if name.startswith("llama"):  # Q/K rows in another order: another summation order
            ok(dq < 1e-3, f"{name}: F32 checkpoint quantised to {q} at load = {q} GGUF (max |diff| {dq:.2e})")
        else:
            ok(dq == 0.0, f"{name}: F32 checkpoint quantised to {q} at load = {q} GGUF, bitwise (max |diff| {dq:.2e})")

    # skipper convert: back to GGUF in llama.cpp's layout; as stored, the
    # generator's own file's logits; quantised, the generator's quantised file's
    for q, want in (("none", G), ("q8_0", None)):
        out = os.path.join(work, f"{name}-converted-{q}.gguf")
        r = run(SKIPPER, "convert", "--type", q, d32, out)
        Lc, why = logits(out, toks) if r.returncode == 0 else (None, r.stderr.decode())
        ref_l = want if want is not None else logits(gen(name + "-q8_0", "--dtype", "q8_0", *opts), toks)[0]
        ok(Lc is not None and float(np.abs(Lc - ref_l).max()) == 0.0,
           f"{name}: skipper convert --type {q}: the logits of the generator's {q} GGUF, bitwise", why)
    rd = gguf.GGUFReader(os.path.join(work, f"{name}-converted-none.gguf"))
    og = gguf.GGUFReader(g32)
    tok = lambda rr: [bytes(rr.fields["tokenizer.ggml.tokens"].parts[i]) for i in rr.fields["tokenizer.ggml.tokens"].data]  # noqa: E731
    names = lambda rr: sorted(t.name for t in rr.tensors if t.name != "rope_freqs.weight")  # noqa: E731
    ok(names(rd) == names(og) and tok(rd) == tok(og) and
       bytes(rd.fields["tokenizer.ggml.pre"].parts[-1]).decode() in ("gpt-2", "qwen2"),
       f"{name}: gguf-py reads the converted file: the generator's {len(names(og))} tensors (llama3 factors as "
       "rope_freqs.weight, as llama.cpp's converter writes them), the same vocabulary")

    # the CLI: tokenizer.json, the chat template, the policies
    rc1, t_hf, e1 = generate(d32, "-n", "24", "--policy", "none", "-p", PROMPT)
    rc2, t_gg, e2 = generate(g32, "-n", "24", "--policy", "none", "-p", PROMPT)
    ok(rc1 == 0 and rc2 == 0 and t_hf == t_gg and len(t_hf) > 0,
       f"{name}: skipper generate on the checkpoint = on the GGUF (chat template from tokenizer_config.json)",
       f"{e1}{e2}\ncheckpoint: {t_hf!r}\nGGUF:       {t_gg!r}")
    rc1, t_hf, e1 = generate(d32, "-n", "24", "--policy", "none", "--template", "none", "-p", PROMPT)
    rc2, t_gg, e2 = generate(g32, "-n", "24", "--policy", "none", "--template", "none", "-p", PROMPT)
    ok(rc1 == 0 and t_hf == t_gg, f"{name}: raw prompt (tokenizer.json alone) = on the GGUF", f"{e1}{e2}")
    for pol in ("lookup", "swift"):
        rc, t, e = generate(d32, "-n", "24", "--policy", pol, "-p", PROMPT)
        rc0, t0, _ = generate(d32, "-n", "24", "--policy", "none", "-p", PROMPT)
        ok(rc == 0 and t == t0, f"{name}: policy {pol} on the checkpoint: the output of plain decoding", e)

# skipper convert refuses what it cannot do, leaving nothing behind
r = run(SKIPPER, "convert", os.path.join(work, "llama.gguf"), os.path.join(tmp, "x.gguf"))
ok(r.returncode == 2 and b"GGUF file already" in r.stderr and not os.path.exists(os.path.join(tmp, "x.gguf")),
   "skipper convert of a GGUF file: exit 2, says so", r.stderr.decode())
r = run(SKIPPER, "convert", os.path.join(work, "llama"), tmp)
ok(r.returncode == 2 and b"is a directory" in r.stderr, "skipper convert to a directory: exit 2", r.stderr.decode())
r = run(SKIPPER, "convert", os.path.join(work, "llama"), "/nonexistent-dir/x.gguf")
ok(r.returncode == 1 and b"/nonexistent-dir/x.gguf" in r.stderr, "skipper convert into a missing directory: exit 1, "
   "naming the file", r.stderr.decode())
r = run(SKIPPER, "convert", "--type", "q3_k", os.path.join(work, "llama"), os.path.join(tmp, "x.gguf"))
ok(r.returncode == 2 and b"q3_k" in r.stderr, "skipper convert --type q3_k: exit 2", r.stderr.decode())

# skip profiles are keyed to a checkpoint by the hash of its files: one made
# for it is found by its name; one made for the GGUF it came from is not used
def file_sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


ck = os.path.join(work, "llama")
text = "".join(f"{f} {file_sha(os.path.join(ck, f))}\n" for f in ["config.json", "model.safetensors"])
sha_ck, sha_gg = hashlib.sha256(text.encode()).hexdigest(), file_sha(os.path.join(work, "llama.gguf"))
PROFILE = "[profile]\nmodel = llama\nmodel_sha256 = {}\nmethod = bo-static\nn_layers = 4\n\n[mask]\nattn = 1\nmlp = 2\n"
for label, sha in (("made for the checkpoint", sha_ck), ("made for the GGUF", sha_gg)):
    data = os.path.join(tmp, "data-" + sha[:8])
    os.makedirs(os.path.join(data, "profiles", "llama"), exist_ok=True)
    with open(os.path.join(data, "profiles", "llama", "bo-static.ini"), "w") as f:
        f.write(PROFILE.format(sha))
    env = dict(os.environ, SKIPPER_DATA_PATH=data, SKIPPER_DEBUG="1", SKIPPER_CACHE_DIR=os.path.join(tmp, "cache"),
               SKIPPER_SYSTEM_CONFIG="/nonexistent")
    r = run(SKIPPER, "generate", "-m", ck, "-t", "2", "--policy", "bo-static", "-n", "16", "-p", PROMPT, env=env)
    err = r.stderr.decode(errors="replace")
    used = "profiles/llama/bo-static.ini (found" in err
    if sha == sha_ck:
        _, plain, _ = generate(ck, "-n", "16", "--policy", "none", "-p", PROMPT)
        ok(r.returncode == 0 and used and r.stdout.decode() == plain,
           f"a profile {label} (model_sha256 = the hash of its files) is found by its name and used, lossless", err[-600:])
    else:
        ok(not used and "made for sha256 " + sha_gg[:12] in err,
           f"a profile {label} is not used for the checkpoint, and the message says whose it is", err[-600:])

# the K-quants want rows of 256: a wider model; rows that are not (a
# llama.cpp fallback type for them) only need to run
gk = gen("qwen2-wide", "--arch", "qwen2", "--embd", "256", "--ff", "512", "--dtype", "f32")
dk = convert(gk, os.path.join(work, "qwen2-wide"), "--dtype", "f32")
toks = list(range(1, 13))
for q in ("q4_k", "q5_k", "q6_k"):
    gq = gen("qwen2-wide-" + q, "--arch", "qwen2", "--embd", "256", "--ff", "512", "--dtype", q)
    Lq, why = logits(dk, toks, q)
    Gq, _ = logits(gq, toks)
    ok(Lq is not None and float(np.abs(Lq - Gq).max()) == 0.0,
       f"F32 checkpoint quantised to {q} at load = {q} GGUF, bitwise", why)
NARROW = ["--arch", "qwen3", "--embd", "96", "--ff", "192", "--heads", "3", "--kv-heads", "1"]
g = gen("qwen3-narrow", *NARROW, "--dtype", "f32")
d = convert(g, os.path.join(work, "qwen3-narrow"), "--dtype", "f32")
r = run(SKIPPER, "info", "--set", "model.quantize=q4_k", d)
ok(r.returncode == 0 and b"quantized:       to Q4_K" in r.stdout,
   "rows of 96 quantised to q4_k fall back as llama.cpp does, and run", r.stderr.decode())
Lf, why = logits(d, toks, "q4_k")
ok(Lf is not None and np.isfinite(Lf).all(), "and its logits are finite", why)
# every row here (96, 192) falls back to Q5_0: the generator's Q5_0 file, bitwise
G5, _ = logits(gen("qwen3-narrow-q5_0", *NARROW, "--dtype", "q5_0"), toks)
ok(Lf is not None and float(np.abs(Lf - G5).max()) == 0.0, "q4_k on rows of 96 and 192 is Q5_0: the Q5_0 GGUF's "
   "logits, bitwise", why)

if smollm2 and os.path.exists(smollm2):
    sm = convert(smollm2, os.path.join(work, "smollm2-bf16"), "--dtype", "bf16", "--shards", "3")
    r = ref.get("smollm2", {"prompt": [], "greedy": [], "greedy_gap": [], "text": ""})
    seq = r["prompt"] + r["greedy"]
    for quant, want in (("none", len(r["greedy"])), ("q8_0", 8)):
        L, why = logits(sm, seq, quant)
        if not ok(L is not None, f"SmolLM2 checkpoint ({quant}) loads", why):
            continue
        same, tie = 0, False
        for i, t in enumerate(r["greedy"][:want]):
            if int(L[len(r["prompt"]) - 1 + i].argmax()) != t:
                tie = r["greedy_gap"][i] < NEAR_TIE
                break
            same += 1
        ok(same == want or tie, f"SmolLM2 BF16 checkpoint, quantize {quant}: {want} greedy tokens as transformers' "
           f"({same} matched{', then a near tie' if tie else ''})")
    rc, text, e = generate(sm, "-n", "48", "--policy", "none", "-p", json.loads(
        '"Write a Python function that checks whether a number is prime."'))
    sure = r.get("text_sure", "")
    ok(rc == 0 and len(sure) > 10 and text.startswith(sure),
       f"skipper generate -m CHECKPOINT: transformers' reply up to its first near tie ({len(sure)} bytes), "
       "the prompt tokenized by skipper from tokenizer.json",
       f"{e}\nskipper:      {text[:120]!r}\ntransformers: {sure[:120]!r}")
    rc1, t1, e1 = generate(sm, "-n", "48", "--policy", "lookup", "-p", "Write a Python function that checks whether a number is prime.")
    ok(rc1 == 0 and t1 == text, "SmolLM2 checkpoint: lookup's output is plain decoding's", e1)
    conv = os.path.join(work, "smollm2-converted.gguf")
    r = run(SKIPPER, "convert", sm, conv)
    rc2, t2, e2 = generate(conv, "-n", "48", "--policy", "none", "-p", "Write a Python function that checks whether a number is prime.")
    # Q/K rows permuted into pairs: another summation order, so the same
    # reply up to transformers' first near tie
    ok(r.returncode == 0 and rc2 == 0 and len(sure) > 10 and t2.startswith(sure),
       "SmolLM2 checkpoint converted to GGUF (chat template, tokenizer, permuted Q/K): transformers' reply up to "
       "its first near tie", r.stderr.decode() + e2 + f"\nconverted: {t2[:120]!r}")
else:
    print("# SmolLM2 not in the cache: its checks are skipped")

done()
