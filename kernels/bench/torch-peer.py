#!/usr/bin/env python3
"""The peer the layer-skipping papers' code runs on: PyTorch + transformers,
eager attention, BF16, greedy decoding with the KV cache, on a randomly
initialised Llama of a given shape (default: Llama-3-8B). Prints key=value
lines for kernels/bench/run.sh:
    torch_decode_tok_per_s=...   new tokens after the first / their time
Usage: torch-peer.py [--prompt 128] [--tokens 128] [--layers 32] ...
Exits 3 (and says why) when torch, transformers or a GPU is missing."""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--embd", type=int, default=4096)
    ap.add_argument("--ff", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--theta", type=float, default=500000.0)
    ap.add_argument("--device", default="cuda", help="cpu: only to try the script on a tiny shape")
    a = ap.parse_args()
    try:
        import torch
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print(f"torch-peer: {e}: no PyTorch/transformers here", file=sys.stderr)
        return 3
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch-peer: torch sees no CUDA device", file=sys.stderr)
        return 3
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    print(f"torch={torch.__version__} transformers={transformers.__version__}")
    cfg = LlamaConfig(vocab_size=a.vocab, hidden_size=a.embd, intermediate_size=a.ff,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads,
                      num_key_value_heads=a.kv_heads, rope_theta=a.theta,
                      max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None,
                      attn_implementation="eager")
    cfg._attn_implementation = "eager"
    rp = getattr(cfg, "rope_parameters", None)  # transformers 5 keeps rope_theta here
    if isinstance(rp, dict):
        rp["rope_theta"] = a.theta
    torch.manual_seed(0)
    # built in BF16 directly on the GPU: no 32 GB float32 copy on the host
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(a.device):
        model = LlamaForCausalLM(cfg)
    model.eval()
    print(f"torch_attn={model.config._attn_implementation} params={sum(p.numel() for p in model.parameters())}")
    ids = torch.randint(0, a.vocab, (1, a.prompt), device=a.device)

    def gen(n):
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                 min_new_tokens=n, do_sample=False, use_cache=True)
        sync()
        assert out.shape[1] == a.prompt + n
        return time.perf_counter() - t

    gen(4)  # warm-up: kernels loaded, allocator primed
    t1 = min(gen(1), gen(1))  # prefill + first token
    tn = gen(a.tokens)
    rate = (a.tokens - 1) / max(tn - t1, 1e-9)
    print(f"torch_prefill_s={t1:.6f}")
    print(f"torch_decode_tokens={a.tokens - 1} torch_decode_tok_per_s={rate:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
