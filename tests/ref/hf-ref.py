#!/usr/bin/env python3
"""Reference logits from transformers for tests/hf-check.py: the checkpoints
tests/gguf-to-hf.py writes from the generated test models (and from
SmolLM2-135M), run by transformers in float32 on the CPU.

  hf-ref.py OUT.json NAME=DIR[:chat]...

For a generated model: the logits of every position of a fixed token
sequence (rounded to 3 decimals). For NAME=DIR:chat (a real model): a chat
prompt tokenized by transformers from the checkpoint's own tokenizer files
(so skipper's tokenizer is checked too), its last position's top logits and
a 48-token greedy continuation with the top-2 gap at each step. Needs torch
and transformers (not part of `make check`: the recorded file is)."""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

TOKENS = [5, 17, 42, 99, 3, 250, 7, 128, 64, 31, 200, 11]
CHAT = [{"role": "user", "content": "Write a Python function that checks whether a number is prime."}]
N_GREEDY = 48
NEAR_TIE = 0.05  # as tests/hf-check.py

torch.manual_seed(0)
out = {}
for arg in sys.argv[2:]:
    name, spec = arg.split("=", 1)
    path, _, kind = spec.partition(":")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.no_grad():
        if kind != "chat":
            logits = model(torch.tensor([TOKENS])).logits[0]
            out[name] = {"tokens": TOKENS, "logits": [[round(float(x), 3) for x in row] for row in logits]}
            continue
        tok = AutoTokenizer.from_pretrained(path)
        ids = tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        seq, gaps = list(ids), []
        for _ in range(N_GREEDY):
            last = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(last, 2)
            gaps.append(round(float(top.values[0] - top.values[1]), 4))
            seq.append(int(top.indices[0]))
        # the text up to the first near tie, where another implementation may
        # rightly continue differently
        sure = next((i for i, g in enumerate(gaps) if g < NEAR_TIE), len(gaps))
        out[name] = {"prompt": ids, "greedy": seq[len(ids):], "greedy_gap": gaps,
                     "text": tok.decode(seq[len(ids):]), "text_sure": tok.decode(seq[len(ids):len(ids) + sure])}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
