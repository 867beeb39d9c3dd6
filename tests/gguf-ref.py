"""Compare skipper's element types and GGUF reading with the gguf Python
package (llama.cpp's own reader and numpy quantisers), an implementation we
share no code with. Prints TAP. Usage: gguf-ref.py QUANT_TOOL GEN_MODEL TMPDIR [MODEL]"""
import os
import subprocess
import sys

try:
    import numpy as np
    import gguf
    from gguf import quants
except Exception as e:  # noqa: BLE001 - any import problem means: skip
    print(f"1..0 # SKIP python gguf package not available ({e})")
    sys.exit(0)

tool, gen, tmp = sys.argv[1:4]
real = sys.argv[4] if len(sys.argv) > 4 and os.path.exists(sys.argv[4]) else None
n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(f"{'' if cond else 'not '}ok {n} - {what}")
    if not cond:
        failed += 1
        if detail:
            print("# " + detail)


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

for t in (T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1):
    out = os.path.join(tmp, f"q{int(t)}.bin")
    rc = subprocess.run([tool, "quantize", str(int(t)), src, out]).returncode
    ours = np.fromfile(out, dtype=np.uint8) if rc == 0 else np.zeros(0, np.uint8)
    ref = quants.quantize(x, t).view(np.uint8).reshape(-1)
    same = ours.size == ref.size and np.array_equal(ours, ref)
    nd = int((ours != ref).sum()) if ours.size == ref.size else -1
    ok(same, f"{t.name} quantisation is byte-identical to gguf-py", f"{nd} bytes differ of {ref.size}")

for dt, t in (("f32", T.F32), ("f16", T.F16), ("bf16", T.BF16), ("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1)):
    path = os.path.join(tmp, f"m-{dt}.gguf")
    subprocess.run([gen, "--out", path, "--dtype", dt, "--layers", "2", "--seed", "3"], check=True)
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
    ok(int(meta["n_layer"]) == int(f["llama.block_count"].parts[-1][0])
       and int(meta["n_vocab"]) == len(f["tokenizer.ggml.tokens"].data)
       and int(meta["n_tensors"]) == len(r.tensors),
       f"generated {dt} model: gguf-py reads the same hyper-parameters and {len(r.tensors)} tensors")

# llama.cpp itself must accept the generated models (format, tokenizer
# metadata) and compute sane logits from them: the CPU backend's parity tests
# rely on that.
try:
    import contextlib
    import llama_cpp
except Exception:  # noqa: BLE001
    llama_cpp = None
if llama_cpp is None:
    print(f"ok {n + 1} # SKIP llama_cpp not available")
    n += 1
else:
    for dt, tok in (("q4_1", "bytes"), ("bf16", "spm")):
        path = os.path.join(tmp, f"lc-{dt}.gguf")
        subprocess.run([gen, "--out", path, "--dtype", dt, "--tokenizer", tok, "--vocab", "300", "--redundant", "1"], check=True)
        try:
            with open(os.devnull, "w") as dn, contextlib.redirect_stderr(dn):
                m = llama_cpp.Llama(model_path=path, n_ctx=64, verbose=False, logits_all=True)
            ids = m.tokenize(b"hello the world", add_bos=False)
            m.eval(ids)
            lg = np.array(m.scores[: len(ids)])
            good = m.n_vocab() == 300 and np.isfinite(lg).all() and 0.3 < float(lg.std()) < 3.0
            detail = f"n_vocab {m.n_vocab()}, logit std {lg.std()}"
        except Exception as e:  # noqa: BLE001
            good, detail = False, str(e)
        ok(good, f"llama.cpp loads the generated {dt}/{tok} model and computes sane logits", detail)

if real:
    r = gguf.GGUFReader(real)
    types = {}
    for tt in r.tensors:
        types.setdefault(tt.tensor_type, tt)
    for t, tt in sorted(types.items()):
        out = os.path.join(tmp, "d.f32")
        rc = subprocess.run([tool, "dequant", real, tt.name, out]).returncode
        ours = np.fromfile(out, dtype=np.float32) if rc == 0 else np.zeros(0, np.float32)
        ref = quants.dequantize(tt.data, tt.tensor_type).astype(np.float32).reshape(-1)
        same = ours.size == ref.size and np.array_equal(ours, ref)
        ok(same, f"SmolLM2 {tt.name} ({T(t).name}): dequantisation equals gguf-py's")
else:
    print(f"ok {n + 1} # SKIP SmolLM2 model not found")
    n += 1

print(f"1..{n}")
sys.exit(1 if failed else 0)
