#!/usr/bin/env python3
"""Reference logits from llama.cpp (llama-cpp-python) for t-parity.

  logits-ref.py MODEL.gguf > tests/data/logits-smollm2.json
  logits-ref.py MODEL.gguf --qwen > tests/data/logits-qwen2.5-coder-0.5b.json
  logits-ref.py MODEL.gguf --bench THREADS [N]   decode tokens/s of llama.cpp
  ... --kv q8_0    (last) the K/V cache in q8_0, with flash attention, as
                   llama.cpp's -ctk q8_0 -ctv q8_0 -fa on (t-parity ... q8_0)

--qwen takes the Qwen prompt set (chatml: code, math, chat, a code edit,
Chinese; and raw code) and fixed ids of the Qwen vocabulary. llama.cpp must
be a build that runs batches on this CPU (on Xeons with AMX, build
llama-cpp-python with -mno-amx-tile -mno-amx-int8: its AMX kernels crashed
on batches > 1 when these files were recorded).

For each prompt (tokenized by llama.cpp, ids stored) and each position: the
argmax, the max logit, and the logits of a few ids (llama.cpp's top 4 at that
position plus fixed ids), then a 64-token greedy continuation with the
gap between llama.cpp's best and second-best logit at each step. Logits are
rounded to 4 decimals to keep the file small (the test tolerance is far
larger than that rounding)."""
import json
import sys
import time

import numpy as np
from llama_cpp import Llama

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "<|im_start|>user\nWhat is 17 times 23?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
]
FIXED_IDS = [0, 1, 2, 198, 30, 314, 504, 1000, 20000, 49151]
N_GREEDY = 64

QWEN_PROMPTS = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    "Write a Python function that returns the n-th Fibonacci number.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nCompute 123 * 456 step by step.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nExplain in two sentences what a hash table is.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nRewrite this function with type hints:\ndef add(a, b):\n    return a + b<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|im_start|>user\n把这句话翻译成英文：我喜欢写代码。<|im_end|>\n<|im_start|>assistant\n",
    "def quicksort(arr):\n    \"\"\"Sort a list of numbers.\"\"\"\n",
    "<|im_start|>user\nWrite a SQL query that returns the ten most recent orders.<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|im_start|>user\nIf a train travels 60 km in 45 minutes, what is its speed in km/h?<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|im_start|>user\nWhat does the Unix command `ls -la` show?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWrite a C function that reverses a string in place.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nSolve for x: 3x + 7 = 22.<|im_end|>\n<|im_start|>assistant\n",
    "import numpy as np\n\n\ndef moving_average(x, n):\n",
]
QWEN_FIXED_IDS = [0, 11, 198, 220, 271, 1000, 20000, 100000, 151643, 151645]


KV = {}  # extra Llama() arguments for --kv


def load(path, threads, logits_all=True):
    return Llama(model_path=path, n_ctx=1024, n_threads=threads, n_threads_batch=threads,
                 logits_all=logits_all, verbose=False, seed=0, **KV)


def record(path, prompts, fixed_ids):
    llm = load(path, 2)
    out = {"model": path.rsplit("/", 1)[-1], "n_vocab": llm.n_vocab(), "fixed_ids": fixed_ids,
           "prompts": []}
    for text in prompts:
        toks = llm.tokenize(text.encode(), add_bos=False, special=True)
        llm.reset()
        llm.eval(toks)
        scores = np.array(llm.scores[: len(toks)], dtype=np.float32)
        pos = []
        for i, row in enumerate(scores):
            top = [int(t) for t in np.argsort(-row, kind="stable")[:4]]
            ids = top + fixed_ids
            pos.append({"argmax": int(np.argmax(row)), "max": round(float(row.max()), 4),
                        "ids": ids, "logits": [round(float(row[t]), 4) for t in ids]})
        greedy, margin = [], []
        row = scores[-1]
        for _ in range(N_GREEDY):
            nxt = int(np.argmax(row))
            top2 = np.sort(row)[-2:]
            greedy.append(nxt)
            margin.append(round(float(top2[1] - top2[0]), 4))
            llm.eval([nxt])
            row = np.array(llm.scores[llm.n_tokens - 1])
        out["prompts"].append({"text": text, "tokens": [int(t) for t in toks],
                               "positions": pos, "greedy": greedy, "greedy_margin": margin})
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


def bench(path, threads, n):
    """Greedy decode through the C API (llama_decode + llama_get_logits_ith):
    Llama.eval() turns every logits row into a Python list, which would
    measure the wrapper instead of llama.cpp."""
    import llama_cpp
    # same prompt ids as tests/bench-decode.c
    prompt = [504, 3575, 282, 4649, 314, 253, 1345, 30, 378, 2015, 314]
    llm = load(path, threads, logits_all=False)
    ctx, nv = llm.ctx, llm.n_vocab()
    llm.eval(prompt)
    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(nv,))
    tok = int(row.argmax())
    one = (llama_cpp.llama_token * 1)()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        one[0] = tok
        if llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(one, 1)) != 0:
            raise SystemExit("llama_decode failed")
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(nv,))
        tok = int(row.argmax())
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    # tokens per CPU-second (all threads) stays meaningful on a loaded machine
    print(f"llama.cpp: threads {threads} decode {n} tok {n / dt:.2f} tok/s, "
          f"{n / dc:.2f} tok per CPU-s")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[-2] == "--kv":
        if sys.argv[-1] != "q8_0":
            raise SystemExit("logits-ref.py: --kv takes q8_0")
        import llama_cpp
        KV.update(type_k=llama_cpp.GGML_TYPE_Q8_0, type_v=llama_cpp.GGML_TYPE_Q8_0, flash_attn=True)
        del sys.argv[-2:]
    if len(sys.argv) >= 4 and sys.argv[2] == "--bench":
        bench(sys.argv[1], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 128)
    elif len(sys.argv) >= 3 and sys.argv[2] == "--qwen":
        record(sys.argv[1], QWEN_PROMPTS, QWEN_FIXED_IDS)
    else:
        record(sys.argv[1], PROMPTS, FIXED_IDS)
