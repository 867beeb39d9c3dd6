#!/usr/bin/env python3
"""Reference logits from llama.cpp (llama-cpp-python) for t-parity.

  logits-ref.py MODEL.gguf > tests/data/logits-smollm2.json
  logits-ref.py MODEL.gguf --bench THREADS [N]   decode tokens/s of llama.cpp

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


def load(path, threads, logits_all=True):
    return Llama(model_path=path, n_ctx=512, n_threads=threads, n_threads_batch=threads,
                 logits_all=logits_all, verbose=False, seed=0)


def record(path):
    llm = load(path, 2)
    out = {"model": path.rsplit("/", 1)[-1], "n_vocab": llm.n_vocab(), "fixed_ids": FIXED_IDS,
           "prompts": []}
    for text in PROMPTS:
        toks = llm.tokenize(text.encode(), add_bos=False, special=True)
        llm.reset()
        llm.eval(toks)
        scores = np.array(llm.scores[: len(toks)], dtype=np.float32)
        pos = []
        for i, row in enumerate(scores):
            top = [int(t) for t in np.argsort(-row, kind="stable")[:4]]
            ids = top + FIXED_IDS
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
    # same prompt ids as tests/bench-decode.c
    prompt = [504, 3575, 282, 4649, 314, 253, 1345, 30, 378, 2015, 314]
    llm = load(path, threads, logits_all=False)
    llm.eval(prompt)
    tok = int(np.argmax(llm.eval_logits[-1])) if llm.eval_logits else 0
    t0 = time.perf_counter()
    for _ in range(n):
        llm.eval([tok])
        tok = int(np.argmax(llm.eval_logits[-1]))
    dt = time.perf_counter() - t0
    print(f"llama.cpp: threads {threads} decode {n} tok {n / dt:.2f} tok/s")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[2] == "--bench":
        bench(sys.argv[1], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 128)
    else:
        record(sys.argv[1])
