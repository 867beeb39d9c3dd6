#!/usr/bin/env python3
"""Record llama.cpp's tokenization as reference data for tests/t-tokenizer.c.

Usage: python3 tests/ref/tokenizer-ref.py [MODEL.gguf [QWEN.gguf]]
writes tests/data/tokenizer-ref.tsv and tests/data/pretokenize-ref.tsv.

MODEL defaults to $SKIPPER_TEST_MODEL, else
${XDG_CACHE_HOME:-~/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf.
Needs the PyPI packages llama-cpp-python (builds llama.cpp) and gguf.

Besides the real SmolLM2 vocabulary ("smollm"), the same vocabulary is
written into vocab-only GGUF files whose tokenizer.ggml.pre names another
pre-tokenizer, so that llama.cpp's GPT-2, default and Llama-3 splitting are
recorded on a real 49k vocabulary too; the real Qwen2.5 vocabulary ("qwen",
151936 tokens: QWEN defaults to the cached qwen2.5-coder-0.5b-instruct file)
on the same texts plus code, CJK, emoji and whitespace runs; and a tiny SentencePiece ("llama")
vocabulary, defined below and mirrored in t-tokenizer.c, records llama.cpp's
SPM merging and byte fallback.

tokenizer-ref.tsv, one case per line, tab separated:
  vocab  add_bos  parse_special  hex(utf-8 text)  ids (space separated)
(vocab smollm-bad: SmolLM2 on invalid UTF-8)

pretokenize-ref.tsv records the word splits of the GPT-2 and Llama-3
pre-tokenizer patterns by the PyPI "regex" module (which llama.cpp's
hand-written splitters reproduce), also for digit groups and upper-case
contractions the SmolLM2 vocabulary cannot tell apart:
  pre  hex(text)  hex(word) ...
"""
import os
import sys
import tempfile

import gguf
import llama_cpp
import regex
from llama_cpp import Llama

TEXTS = [
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "12345 3.14159 2026",
    "1234567890 x1y22z333 0.5",
    "a  b   c\n\n\td",
    "  leading spaces",
    " one leading space",
    "trailing spaces   ",
    "\n\nnewlines\r\nand CRLF\r\n",
    "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b\n\nif x:\n\tprint(add(1, 2))\n",
    "for (int i = 0; i < n; i++) { s += v[i]; }",
    "I'm sure you've seen it, they'll say we'd won't can't DON'T It'S",
    "naïve café Ångström façade über",
    "日本語のテキストです。中文文本。한국어",
    "emoji 😀🎉👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "Привет, мир! Γειά σου κόσμε",
    "مرحبا بالعالم",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more <file_sep>x",
    "",
    " ",
    "   ",
    "\t",
    "$100 + 50% = <tag> ~~~ |||",
    "½ ² Ⅻ ٣ 一二三",
    "ǅungla ΐ ﬁ",
]

QWEN_TEXTS = [
    "    def __init__(self, x: int) -> None:\n        self.x = x  # comment\n",
    "        \n\n\n    \t\t  x",
    "if (a && b || !c) { return a->b[0] >> 2; } // C++\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "我喜欢写代码。日本語、한국어、中文混合 text 123",
    "👍🏽👨‍👩‍👧🇫🇷✨🚀 emoji after text😀",
    "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\n2+2=?<|im_end|>\n",
    "<|endoftext|><|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "1234567890 3.14159 ١٢٣ ½",
    "https://example.com/a_b-c?d=1&e=%20 user@example.com",
]

BAD_UTF8 = [b"bad \xff\xfe bytes \xc3", b"\xe6\x97", b"\x80\x80abc\xed\xa0\x80", b"\xf0\x9f\x98"]

PRE_TEXTS = TEXTS + [
    "1234567 DON'T It'S we'LL 'RE 'Ve",
    "(hello) [x] \"quoted\"",
    "a\r\n\r\n  b",
    "   \n x",
    "x  \n\n  y\r",
    "ab12345cd 0.123456",
    "...!!! ?? --> <=",
]
PRE_PATTERNS = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+",
}

# Tiny SentencePiece vocabulary: <unk>, <s>, </s>, 256 byte tokens, then pieces
# with scores (higher merges first).  Mirrored in tests/t-tokenizer.c.
SPM_PIECES = [
    ("▁", -1.0), ("a", -2.0), ("b", -2.0), ("c", -2.0), ("d", -2.0), ("e", -2.0),
    ("h", -2.0), ("l", -2.0), ("o", -2.0), ("r", -2.0), ("w", -2.0),
    ("▁h", -3.0), ("he", -4.0), ("ll", -3.5), ("llo", -5.0), ("hello", -6.0),
    ("▁hello", -5.5), ("▁w", -3.2), ("or", -3.3), ("▁wor", -7.0), ("ld", -4.5),
    ("▁world", -6.5), ("é", -2.5), ("<user>", 0.0),
]
SPM_TEXTS = ["hello world", "hello", "Hello", "wörld", "héllo  world", "a\nb",
             " hello", "abc<user>d", "<s>ab", ""]


def model_path():
    if len(sys.argv) > 1:
        return sys.argv[1]
    if os.environ.get("SKIPPER_TEST_MODEL"):
        return os.environ["SKIPPER_TEST_MODEL"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(cache, "skipper", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def arch_keys(w, n_vocab):
    w.add_context_length(2048)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_rope_dimension_count(64)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)


def field(r, key):
    f = r.fields[key]
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    v = f.parts[f.data[0]]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(v).decode("utf-8")
    return v.tolist()[0]


def write_variant(src, pre, path):
    r = gguf.GGUFReader(src)
    tokens = field(r, "tokenizer.ggml.tokens")
    w = gguf.GGUFWriter(path, "llama")
    arch_keys(w, len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(field(r, "tokenizer.ggml.token_type"))
    w.add_token_merges(field(r, "tokenizer.ggml.merges"))
    w.add_bos_token_id(field(r, "tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field(r, "tokenizer.ggml.eos_token_id"))
    w.add_add_bos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_spm(path):
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + [p for p, _ in SPM_PIECES]
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [s for _, s in SPM_PIECES]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(SPM_PIECES) - 1) + [4]
    w = gguf.GGUFWriter(path, "llama")
    arch_keys(w, len(toks))
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def emit(name, llm, texts, cases):
    for text in texts:
        raw = text if isinstance(text, bytes) else text.encode("utf-8")
        for add_bos, special in cases:
            ids = llm.tokenize(raw, add_bos=add_bos, special=special)
            print("%s\t%d\t%d\t%s\t%s" % (name, add_bos, special, raw.hex(),
                                          " ".join(str(i) for i in ids)))


def write_pretokenize(path):
    with open(path, "w") as f:
        f.write("# word splits by the PyPI regex module %s, written by tests/ref/tokenizer-ref.py\n"
                % regex.__version__)
        f.write("# pre\thex(text)\thex(word) ...\n")
        for pre, pat in PRE_PATTERNS.items():
            for text in PRE_TEXTS:
                words = regex.findall(pat, text)
                assert "".join(words) == text
                f.write("%s\t%s\t%s\n" % (pre, text.encode("utf-8").hex(),
                                           " ".join(w.encode("utf-8").hex() for w in words)))


def qwen_path():
    if len(sys.argv) > 2:
        return sys.argv[2]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(cache, "skipper", "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


def main():
    src = model_path()
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
    write_pretokenize(os.path.join(data, "pretokenize-ref.tsv"))
    sys.stdout = open(os.path.join(data, "tokenizer-ref.tsv"), "w")
    print("# llama.cpp reference tokenization, written by tests/ref/tokenizer-ref.py")
    print("# llama-cpp-python %s, gguf %s, model %s" % (llama_cpp.__version__, gguf.__version__
                                                         if hasattr(gguf, "__version__") else "?",
                                                         os.path.basename(src)))
    print("# regenerate: python3 tests/ref/tokenizer-ref.py")
    print("# vocab\tadd_bos\tparse_special\thex(text)\tids")
    cases = [(False, False), (False, True)]
    llm = Llama(model_path=src, vocab_only=True, verbose=False)
    emit("smollm", llm, TEXTS, cases)
    emit("smollm", llm, ["Hello"], [(True, False)])
    # Invalid UTF-8 (no round trip: llama.cpp reads each bad byte as U+FFFD)
    emit("smollm-bad", llm, BAD_UTF8, [(False, False)])
    del llm
    llm = Llama(model_path=qwen_path(), vocab_only=True, verbose=False)
    emit("qwen", llm, TEXTS + QWEN_TEXTS, cases)
    emit("qwen-bad", llm, BAD_UTF8, [(False, False)])
    del llm
    with tempfile.TemporaryDirectory() as d:
        for name, pre in (("gpt2", "gpt-2"), ("llama3", "llama-bpe"), ("default", "default"), ("qwen2", "qwen2")):
            p = os.path.join(d, pre + ".gguf")
            write_variant(src, pre, p)
            llm = Llama(model_path=p, vocab_only=True, verbose=False)
            emit(name, llm, PRE_TEXTS, [(False, True)])
            del llm
        p = os.path.join(d, "spm.gguf")
        write_spm(p)
        llm = Llama(model_path=p, vocab_only=True, verbose=False)
        emit("spm", llm, SPM_TEXTS, [(True, False), (False, False), (True, True)])
        del llm


if __name__ == "__main__":
    main()
