"""Compare skipper's element types and GGUF reading with the gguf Python
package (llama.cpp's own reader and numpy quantisers), an implementation we
share no code with. Prints TAP.
Usage: gguf-ref.py QUANT_TOOL GEN_MODEL TMPDIR [LABEL=MODEL.gguf]..."""
import os
import subprocess
import sys

from tap import done, ok, skip

try:
    import numpy as np
    import gguf
    from gguf import quants
except Exception as e:  # noqa: BLE001 - any import problem means: skip
    print(f"1..0 # SKIP python gguf package not available ({e})")
    sys.exit(0)

tool, gen, tmp = sys.argv[1:4]
# the real models to check, "LABEL=PATH" each (skipped when not there)
real = [a.split("=", 1) for a in sys.argv[4:]]



T = gguf.GGMLQuantizationType
rng = np.random.default_rng(7)
x = rng.standard_normal((64, 64)).astype(np.float32) * np.float32(3)
x[1] *= np.float32(1e-6)             # tiny values: fp16 subnormals
x[2] = 0                             # all-zero row
x[3, :32] = np.float32(7)            # constant block
x[4] = np.linspace(-65600, 65600, 64, dtype=np.float32)  # fp16 overflow to inf
x[5, ::2] = -x[5, 1::2]              # +-max in one block (Q4_0 asymmetry)
src = os.path.join(tmp, "x.f32")
x.tofile(src)

for t in (T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
    out = os.path.join(tmp, f"q{int(t)}.bin")
    rc = subprocess.run([tool, "quantize", str(int(t)), src, out]).returncode
    ours = np.fromfile(out, dtype=np.uint8) if rc == 0 else np.zeros(0, np.uint8)
    ref = quants.quantize(x, t).view(np.uint8).reshape(-1)
    same = ours.size == ref.size and np.array_equal(ours, ref)
    nd = int((ours != ref).sum()) if ours.size == ref.size else -1
    ok(same, f"{t.name} quantisation is byte-identical to gguf-py", f"{nd} bytes differ of {ref.size}")

# gguf-py has no K-quant quantiser (nor does it need one: llama.cpp's is a
# search); ours only has to write valid blocks that decode to what gguf-py
# decodes, close to the input.
for t in (T.Q4_K, T.Q5_K, T.Q6_K):
    out = os.path.join(tmp, f"q{int(t)}.bin")
    rc = subprocess.run([tool, "quantize", str(int(t)), src, out]).returncode
    blocks = np.fromfile(out, dtype=np.uint8) if rc == 0 else np.zeros(0, np.uint8)
    bs = {T.Q4_K: 144, T.Q5_K: 176, T.Q6_K: 210}[t]
    good = rc == 0 and blocks.size == x.size // 256 * bs
    if good:
        ref = quants.dequantize(blocks.reshape(-1, bs), t).astype(np.float32).reshape(x.shape)
        # row 4 overflows fp16 on purpose; it shares a 256-element super-block
        # (and its scale) with rows 5-7, which it drowns
        rows = [r for r in range(x.shape[0]) if r // 4 != 1]
        err = float(np.abs(ref[rows] - x[rows]).max() / np.abs(x[rows]).max())
        good = err < {T.Q4_K: 0.12, T.Q5_K: 0.06, T.Q6_K: 0.03}[t]
    ok(good, f"{t.name} quantisation: gguf-py decodes our blocks to the input within the type's precision",
       f"rc {rc}, {blocks.size} bytes" + (f", error {err:.3g} of the largest value" if rc == 0 and blocks.size else ""))

models = [(dt, []) for dt in ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1")]
models += [("q5_0", ["--arch", "qwen2"]), ("q5_1", ["--arch", "qwen3"])]
wide = ["--embd", "256", "--ff", "512", "--heads", "4", "--kv-heads", "2"]
models += [("q4_k", ["--arch", "qwen2"] + wide), ("q5_k", wide), ("q6_k", ["--arch", "qwen3", "--head-dim", "128"] + wide)]
for dt, extra in models:
    path = os.path.join(tmp, f"m-{dt}.gguf")
    subprocess.run([gen, "--out", path, "--dtype", dt, "--layers", "2", "--seed", "3"] + extra, check=True)
    r = gguf.GGUFReader(path)
    worst = 0.0
    checked = 0
    for name in ("token_embd.weight", "blk.1.attn_q.weight", "blk.0.ffn_down.weight", "output_norm.weight"):
        tt = next(tt for tt in r.tensors if tt.name == name)
        out = os.path.join(tmp, "d.f32")
        subprocess.run([tool, "dequant", path, name, out], check=True)
        ours = np.fromfile(out, dtype=np.float32)
        ref = quants.dequantize(tt.data, tt.tensor_type).astype(np.float32).reshape(-1)
        if ours.size != ref.size:
            worst = float("inf")
            break
        worst = max(worst, float(np.abs(ours - ref).max()))
        checked += 1
    ok(worst == 0.0 and checked == 4, f"generated {dt} model: our dequantisation equals gguf-py's", f"max diff {worst}")
    meta = dict(line.split("=", 1) for line in subprocess.run([tool, "meta", path], capture_output=True, text=True, check=True).stdout.split())
    f = r.fields
    arch = bytes(f["general.architecture"].parts[-1]).decode()
    ok(int(meta["n_layer"]) == int(f[arch + ".block_count"].parts[-1][0])
       and int(meta["n_vocab"]) == len(f["tokenizer.ggml.tokens"].data)
       and int(meta["n_tensors"]) == len(r.tensors),
       f"generated {dt} model: gguf-py reads the same hyper-parameters and {len(r.tensors)} tensors")

# llama.cpp itself must accept the generated models (format, tokenizer
# metadata) and compute the same logits from them: the CPU backend's parity
# tests rely on that. With llama-cpp-python its answers are asked live;
# without it (CI), they come from tests/data/gguf-llamacpp.json and
# gguf-llamacpp.f32, recorded for the very same files (gen-model writes the
# same bytes on every machine; the record names each file's SHA-256). A
# generated file that differs from the recorded one fails and says how to
# record again:
#   GGUF_REF_RECORD=tests/data python3 tests/gguf-ref.py tests/quant-tool tests/gen-model TMPDIR
# (with llama-cpp-python installed, from a build tree at the top of the
# source tree).
import hashlib
import json

try:
    import contextlib
    import llama_cpp
except Exception:  # noqa: BLE001
    llama_cpp = None
datadir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
record_dir = os.environ.get("GGUF_REF_RECORD")
if record_dir and llama_cpp is None:
    print("Bail out! GGUF_REF_RECORD needs llama-cpp-python")
    sys.exit(1)
recorded, rec_floats, new_record, new_floats = {}, np.zeros(0, np.float32), {}, []
if not record_dir:
    with open(os.path.join(datadir, "gguf-llamacpp.json")) as f:
        recorded = json.load(f)
    rec_floats = np.fromfile(os.path.join(datadir, "gguf-llamacpp.f32"), dtype=np.float32)
RERECORD = "run GGUF_REF_RECORD=tests/data tests/gguf-ref.py ... with llama-cpp-python (see tests/gguf-ref.py)"


def llama_answer(key, path, ask):
    """What llama.cpp answers for the model file at path: ask(path) -> (dict,
    float32 array or None), live, or as recorded for these bytes. Returns
    (answer, floats, source), or (None, None, why) when there is none."""
    with open(path, "rb") as fh:
        sha = hashlib.sha256(fh.read()).hexdigest()
    rec = recorded.get(key)
    if llama_cpp is not None:
        answer, floats = ask(path)
        if record_dir:
            entry = dict(answer, sha256=sha)
            if floats is not None:
                entry.update(offset=sum(a.size for a in new_floats), shape=list(floats.shape))
                new_floats.append(floats.astype(np.float32).reshape(-1))
            new_record[key] = entry
        elif not rec or rec["sha256"] != sha:
            return None, None, f"tests/data/gguf-llamacpp.json has no record of this {key} file: {RERECORD}"
        return answer, floats, f"llama.cpp {llama_cpp.__version__}"
    if not rec or rec["sha256"] != sha:
        return None, None, f"llama-cpp-python not installed and no record of this {key} file: {RERECORD}"
    floats = None
    if "shape" in rec:
        floats = rec_floats[rec["offset"]:rec["offset"] + int(np.prod(rec["shape"]))].reshape(rec["shape"])
    return rec, floats, f"llama.cpp {recorded['llama_cpp_python']}, recorded"


# Forward parity on tiny generated models of every architecture and every
# type llama.cpp's own kernels multiply (logits of a 24-token prefill).
# The tolerance is what rounding differences between two correct
# implementations give on these 2-layer models (seen: at most 1.5 % of
# the largest logit); a wrong layout, bias or norm is off by tens of %.
N_PARITY = 24


def parity_ids(vocab):
    ids, s_ = [], 7
    for _ in range(N_PARITY):
        s_ = (s_ * 1103515245 + 12345) & 0xFFFFFFFF
        ids.append((s_ >> 8) % vocab)
    return ids


def ask_logits(path):
    with open(os.devnull, "w") as dn, contextlib.redirect_stderr(dn):
        m = llama_cpp.Llama(model_path=path, n_ctx=64, n_threads=2, verbose=False, logits_all=True)
    m.eval(parity_ids(m.n_vocab()))
    return {"n_vocab": m.n_vocab()}, np.array(m.scores[:N_PARITY], dtype=np.float32)


for dt, extra in models:
    if dt in ("f32", "f16", "bf16", "q4_1"):
        continue
    path = os.path.join(tmp, f"m-{dt}.gguf")
    mine = os.path.join(tmp, "ours.f32")
    arch = extra[1] if extra and extra[0] == "--arch" else "llama"
    try:
        answer, ref, source = llama_answer(f"logits-{arch}-{dt}", path, ask_logits)
        if answer is None:
            ok(False, f"generated {arch} {dt} model: logits agree with llama.cpp", source)
            continue
        V, N = answer["n_vocab"], N_PARITY
        subprocess.run([tool, "logits", path, str(N), mine], check=True)
        got = np.fromfile(mine, dtype=np.float32).reshape(N, V)
        diff = float(np.abs(got - ref).max())
        scale = float(np.abs(ref).max())
        srt = np.sort(ref, axis=1)
        clear = (srt[:, -1] - srt[:, -2]) > 2 * diff
        flips = int(((got.argmax(1) != ref.argmax(1)) & clear).sum())
        good = diff <= 0.05 * scale and flips == 0
        detail = f"max |ours - llama.cpp| {diff:.4f}, scale {scale:.2f}, {flips} top-1 flips outside near ties; {source}"
    except Exception as e:  # noqa: BLE001
        good, detail = False, str(e)
    ok(good, f"generated {arch} {dt} model: logits agree with llama.cpp ({detail})", detail)


def ask_load(path):
    with open(os.devnull, "w") as dn, contextlib.redirect_stderr(dn):
        m = llama_cpp.Llama(model_path=path, n_ctx=64, verbose=False, logits_all=True)
    ids = m.tokenize(b"hello the world", add_bos=False)
    m.eval(ids)
    lg = np.array(m.scores[: len(ids)])
    return {"n_vocab": m.n_vocab(), "finite": bool(np.isfinite(lg).all()), "logit_std": float(lg.std())}, None


for dt, tok in (("q4_1", "bytes"), ("bf16", "spm")):
    path = os.path.join(tmp, f"lc-{dt}.gguf")
    subprocess.run([gen, "--out", path, "--dtype", dt, "--tokenizer", tok, "--vocab", "300", "--redundant", "1"], check=True)
    try:
        a, _, source = llama_answer(f"load-{dt}-{tok}", path, ask_load)
        good = a is not None and a["n_vocab"] == 300 and a["finite"] and 0.3 < a["logit_std"] < 3.0
        detail = f"n_vocab {a['n_vocab']}, logit std {a['logit_std']:.4f}; {source}" if a else source
    except Exception as e:  # noqa: BLE001
        good, detail = False, str(e)
    ok(good, f"llama.cpp loads the generated {dt}/{tok} model and computes sane logits ({detail})", detail)

if record_dir:
    new_record = {"llama_cpp_python": llama_cpp.__version__,
                  "written_by": "GGUF_REF_RECORD=tests/data tests/gguf-ref.py", **dict(sorted(new_record.items()))}
    with open(os.path.join(record_dir, "gguf-llamacpp.json"), "w") as f:
        json.dump(new_record, f, indent=1)
        f.write("\n")
    np.concatenate(new_floats).tofile(os.path.join(record_dir, "gguf-llamacpp.f32"))

# Real files: one tensor of every type each holds, dequantised by both.
for label, path in real:
    if not os.path.exists(path):
        skip(f"{label} not found ({path})")
        continue
    r = gguf.GGUFReader(path)
    types = {}
    for tt in r.tensors:
        if tt.n_elements < types.get(tt.tensor_type, tt).n_elements or tt.tensor_type not in types:
            types[tt.tensor_type] = tt  # the smallest of each type keeps the test quick
    for t, tt in sorted(types.items()):
        out = os.path.join(tmp, "d.f32")
        rc = subprocess.run([tool, "dequant", path, tt.name, out]).returncode
        ours = np.fromfile(out, dtype=np.float32) if rc == 0 else np.zeros(0, np.float32)
        ref = quants.dequantize(tt.data, tt.tensor_type).astype(np.float32).reshape(-1)
        same = ours.size == ref.size and np.array_equal(ours, ref)
        ok(same, f"{label} {tt.name} ({T(t).name}): dequantisation equals gguf-py's")

done()
