#!/usr/bin/env python3
"""How far drafts without a model pass could take greedy decoding on the
token streams of a benchmark run: per category, the speedup over plain
decoding if every round drafted exactly the tokens the model then wrote
(no more, no fewer) from a given source, each verify pass over n rows
costing what the cost curve says at the context it reads (the curve
priced as the engine prices it, where the file says what the context
adds). It bounds what any rule for sizing and
choosing lookup drafts can reach on those outputs; the measured column is
what `lookup` reached in the run. A benchmark analysis, not a test."""
import argparse
import collections
import glob
import json
import os
import sys

# the engine's limits (core/engine/lookup.h, engine.h)
MAX_NGRAM = 4
CONTEXT = 64
NGRAM_MAX_CTX = 4


def fail(msg):
    sys.stderr.write("lookup-ceiling: %s\n" % msg)
    sys.exit(1)


def read_curve(path):
    """verify[n] in decode steps from a skipper .costs file, and what the
    context adds ("context", "context_row", "context_extra_row"; 0 where
    the file has none): {"verify": {n: steps}, "ctx": C, "row": R, "extra": X}."""
    curve, ctx = {}, {"context": 0.0, "context_row": 0.0, "context_extra_row": 0.0}
    try:
        with open(path) as f:
            for no, line in enumerate(f, 1):
                w = line.split()
                if w and w[0] == "verify":
                    try:
                        n, v = int(w[1]), float(w[2])
                    except (IndexError, ValueError):
                        fail("%s:%d: expected 'verify N COST'" % (path, no))
                    curve[n] = v
                elif w and w[0] in ctx:
                    try:
                        ctx[w[0]] = float(w[1])
                    except (IndexError, ValueError):
                        fail("%s:%d: expected '%s NUMBER'" % (path, no, w[0]))
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if curve.get(1) != 1.0 or sorted(curve) != list(range(1, len(curve) + 1)):
        fail("%s: no verify curve from 1 row up" % path)
    return {"verify": curve, "ctx": ctx["context"], "row": ctx["context_row"], "extra": ctx["context_extra_row"]}


def cost(curve, n, at):
    """A pass of n rows after `at` committed tokens, in steps after the
    curve's own context (the engine's pricing, econ_costs_at)."""
    v = curve["verify"]
    top = len(v)
    if n <= top:
        c = v[n]
    else:
        c = v[top] + (v[top] - v[top - 1] if top > 1 else 1.0) * (n - top)
    return c + max(0.0, at - curve["ctx"]) * (curve["row"] + (n - 1) * curve["extra"])


def read_ngrams(path):
    """context tuple -> most frequent next token, as [lookup] ngrams reads it."""
    table = {}
    try:
        with open(path) as f:
            for no, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                try:
                    v = [int(x) for x in line.split()]
                except ValueError:
                    fail("%s:%d: expected whole numbers" % (path, no))
                if len(v) < 4 or len(v) > 3 + NGRAM_MAX_CTX:
                    fail("%s:%d: expected 'next count total context...'" % (path, no))
                table[tuple(v[3:])] = v[0]
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    return table


def read_runs(paths):
    """(category, id) -> {policy: record} from skipper bench JSONL files or
    bench-peers directories (their raw/skipper-*.jsonl)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(glob.glob(os.path.join(p, "raw", "skipper-*.jsonl")))
            if not found:
                fail("%s: no raw/skipper-*.jsonl (not a bench-peers directory)" % p)
            files += found
        else:
            files.append(p)
    runs = collections.OrderedDict()
    for path in files:
        try:
            f = open(path)
        except OSError as e:
            fail("%s: %s" % (path, e.strerror))
        with f:
            for no, line in enumerate(f, 1):
                try:
                    d = json.loads(line)
                    key, pol = (d["category"], str(d["id"])), d["policy"]
                    good = all(isinstance(d[k], list) for k in ("prompt_ids", "output_ids"))
                except (ValueError, KeyError, TypeError):
                    good = False
                if not good:
                    fail("%s:%d: not a skipper bench record with prompt_ids and output_ids" % (path, no))
                runs.setdefault(key, {})[pol] = d
    return runs


def context_proposals(hist, every, max_out):
    """The continuation after the earlier occurrence of the longest suffix
    (1..MAX_NGRAM tokens) that occurred before whose preceding tokens agree
    longest with the suffix's (up to CONTEXT; the most recent on a tie), as
    lookup proposes it; with every, the continuations after all its
    occurrences."""
    n = len(hist)
    for g in range(min(MAX_NGRAM, n - 1), 0, -1):
        key = hist[n - g:]
        found, best = [], -1
        for j in range(n - g - 1, -1, -1):
            if hist[j:j + g] != key:
                continue
            cont = hist[j + g:j + g + max_out]
            if every:
                found.append(cont)
                continue
            agree = 0
            while agree < CONTEXT and j - 1 - agree >= 0 and hist[j - 1 - agree] == hist[n - g - 1 - agree]:
                agree += 1
            if agree > best:
                found, best = [cont], agree
        if found:
            return found
    return []


def corpus_proposal(table, hist, max_out):
    """The corpus chain: the longest known context's next token, repeated."""
    h, out = list(hist), []
    while len(out) < max_out:
        for n in range(min(NGRAM_MAX_CTX, len(h)), 0, -1):
            nxt = table.get(tuple(h[-n:]))
            if nxt is not None:
                break
        else:
            break
        out.append(nxt)
        h.append(nxt)
    return out


def accepted(draft, out, pos):
    a = 0
    while a < len(draft) and draft[a] == out[pos + a]:
        a += 1
    return a


def plain(curve, prompt, out):
    """Decode steps plain decoding spends on the output after its first token."""
    return sum(cost(curve, 1, len(prompt) + pos) for pos in range(1, len(out)))


def ceiling(curve, prompt, out, max_draft, table, every):
    """Decode steps the output costs when each round drafts exactly what
    will be accepted from the sources; the first token comes from prefill."""
    pos, steps = 1, 0.0
    while pos < len(out):
        cap = min(max_draft, len(out) - pos - 1)  # a round adds a bonus token
        hist = prompt + out[:pos]
        best = 0
        if cap > 0:
            props = context_proposals(hist, every, cap)
            if table is not None:
                props.append(corpus_proposal(table, hist, cap))
            for p in props:
                best = max(best, accepted(p, out, pos))
        steps += cost(curve, best + 1, len(prompt) + pos)
        pos += best + 1
    return steps


def decode_seconds(rec):
    s = rec.get("stats")
    try:
        return s["seconds"] - s["prefill_seconds"]
    except (KeyError, TypeError):
        return None


def main():
    ap = argparse.ArgumentParser(
        description="Upper bounds of lookup drafting on the token streams of a benchmark run.")
    ap.add_argument("runs", nargs="+", metavar="RUN",
                    help="a bench-peers output directory or a skipper bench --jsonl file")
    ap.add_argument("--costs", required=True, metavar="FILE",
                    help="the model's cost curve (~/.cache/skipper/costs/MODEL-*.costs)")
    ap.add_argument("--ngrams", metavar="FILE", help="corpus n-grams (the model's ngrams.txt)")
    ap.add_argument("--max-draft", type=int, default=16, metavar="N",
                    help="drafted tokens per round at most ([lookup] max_draft, default 16)")
    a = ap.parse_args()
    if a.max_draft < 1:
        fail("--max-draft: expected a number >= 1")
    curve = read_curve(a.costs)
    table = read_ngrams(a.ngrams) if a.ngrams else None
    runs = read_runs(a.runs)

    cols = [("context", None, False)]
    if table is not None:
        cols.append(("+ corpus", table, False))
    cols.append(("+ every occurrence", table, True))
    tot = collections.OrderedDict()
    for (cat, _), r in runs.items():
        base = r.get("none")
        if base is None:
            continue
        out, prompt = base["output_ids"], base["prompt_ids"]
        if len(out) < 2:
            continue
        t = tot.setdefault(cat, collections.Counter())
        t["tokens"] += len(out) - 1
        t["plain"] += plain(curve, prompt, out)
        for name, tab, every in cols:
            t[name] += ceiling(curve, prompt, out, a.max_draft, tab, every)
        lk = r.get("lookup")
        if lk and decode_seconds(base) and decode_seconds(lk):
            t["none_s"] += decode_seconds(base)
            t["lookup_s"] += decode_seconds(lk)
    if not tot:
        fail("no plain-decoding ('none') records with 2 or more output tokens")

    def row(label, t):
        cells = [label, str(t["tokens"])]
        cells.append("%.2fx" % (t["none_s"] / t["lookup_s"]) if t["lookup_s"] > 0 else "-")
        cells += ["%.2fx" % (t["plain"] / t[name]) for name, _, _ in cols]
        return "| " + " | ".join(cells) + " |"

    print("| category | tokens | measured lookup | " + " | ".join("ceiling: " + c[0] for c in cols) + " |")
    print("|---|" + "---:|" * (2 + len(cols)))
    all_t = collections.Counter()
    for cat, t in tot.items():
        print(row(cat, t))
        all_t.update(t)
    print(row("overall", all_t))


if __name__ == "__main__":
    main()
