#!/usr/bin/env python3
"""skipper serve driven by the openai package, /metrics read by
prometheus_client's parser. TAP lines on standard output (the caller
counts them and prints the plan).

  openai-client.py PORT KEY GENERATED

GENERATED: what `skipper generate` wrote for the chat prompt below
(the server must answer the same, streamed or not)."""
import sys

import openai
from prometheus_client.parser import text_string_to_metric_families
import urllib.request

n = 0
failed = False


def ok(cond, what):
    global n, failed
    n += 1
    print("%sok %d - %s" % ("" if cond else "not ", n, what), flush=True)
    failed |= not cond


def raises(cls, what, fn, **want):
    """fn() must raise cls with the attributes in want (param, code, ...)."""
    try:
        fn()
    except cls as e:
        got = {k: getattr(e, k, None) for k in want}
        ok(got == want, "%s: %s %s" % (what, cls.__name__, got))
        return
    except Exception as e:  # the wrong error
        ok(False, "%s: %r" % (what, e))
        return
    ok(False, "%s: no error" % what)


port, key, generated = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], encoding="utf-8").read()
PROMPT = "What is the capital of France?"
base = "http://127.0.0.1:%d/v1" % port
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=600)

models = client.models.list().data
ok(len(models) == 1 and models[0].id.endswith(".gguf"), "models.list(): one model, %s" % models[0].id)
model = models[0].id

# chat, the answer whole
r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=24,
                                   temperature=0)
ok(r.object == "chat.completion" and r.choices[0].message.role == "assistant", "chat: a chat.completion")
ok(r.choices[0].message.content + "\n" == generated, "chat: greedy text equal to skipper generate's")
ok(r.choices[0].finish_reason in ("stop", "length"), "chat: finish_reason %s" % r.choices[0].finish_reason)
ok(r.usage.completion_tokens <= 24 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens,
   "chat: usage %s" % r.usage)
extra = r.model_extra.get("skipper") or {}
ok(extra.get("policy") == "lookup" and set(extra.get("sources", {})) == {"layer_skip", "lookup", "ngram", "history"}
   and "alpha" in extra and "mean_accepted" in extra, "chat: skipper's statistics beside usage")
chat_text, chat_tokens = r.choices[0].message.content, r.usage.completion_tokens

# chat, streamed with usage
chunks = list(client.chat.completions.create(model=model, messages=[{"role": "user", "content": PROMPT}],
                                             max_tokens=24, temperature=0, stream=True,
                                             stream_options={"include_usage": True}))
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
ok(chunks[0].choices[0].delta.role == "assistant", "stream: the role in the first chunk")
ok(text == chat_text, "stream: the same text")
finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
ok(finish == [r.choices[0].finish_reason], "stream: one finish_reason, the same")
ok(chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == chat_tokens,
   "stream: usage in the last chunk")
ok(len({c.id for c in chunks}) == 1, "stream: one id")

# completions, whole and streamed
c = client.completions.create(model=model, prompt="The capital of Italy is", max_tokens=12, temperature=0)
ok(c.object == "text_completion" and len(c.choices[0].text) > 0, "completions: %r" % c.choices[0].text)
s = list(client.completions.create(model=model, prompt="The capital of Italy is", max_tokens=12, temperature=0,
                                   stream=True))
ok("".join(x.choices[0].text for x in s) == c.choices[0].text, "completions streamed: the same text")
ok(s[-1].choices[0].finish_reason == c.choices[0].finish_reason, "completions streamed: the same finish_reason")
st = client.completions.create(model=model, prompt="1, 2, 3, 4,", max_tokens=20, temperature=0, stop=[" 7"])
ok(st.choices[0].finish_reason == "stop" and " 7" not in st.choices[0].text and st.choices[0].text.endswith("6,"),
   "stop: cut before ' 7': %r" % st.choices[0].text)
sampled = client.completions.create(model=model, prompt="Once upon a time", max_tokens=8, temperature=0.8,
                                    top_p=0.9, seed=7, extra_body={"top_k": 20})
ok(sampled.usage.completion_tokens > 0, "sampling (temperature, top_p, top_k, seed): %r" % sampled.choices[0].text)

# errors as the package raises them
msgs = [{"role": "user", "content": "Hi"}]
raises(openai.BadRequestError, "n=2", lambda: client.chat.completions.create(model=model, messages=msgs, n=2),
       param="n", code="unsupported_parameter")
raises(openai.BadRequestError, "logprobs",
       lambda: client.chat.completions.create(model=model, messages=msgs, logprobs=True), param="logprobs")
raises(openai.BadRequestError, "temperature=3",
       lambda: client.chat.completions.create(model=model, messages=msgs, temperature=3), param="temperature")
raises(openai.BadRequestError, "max_tokens past the context",
       lambda: client.completions.create(model=model, prompt="a", max_tokens=100000),
       param="max_tokens", code="context_length_exceeded")
raises(openai.AuthenticationError, "a wrong key",
       lambda: openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list(), code="invalid_api_key")
raises(openai.NotFoundError, "an unknown endpoint",
       lambda: client.embeddings.create(model=model, input="x"), code="not_found")

# /metrics through a Prometheus parser
req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers={"Authorization": "Bearer " + key})
text = urllib.request.urlopen(req, timeout=60).read().decode()
fam = {f.name: f for f in text_string_to_metric_families(text)}


def value(name, **labels):
    for smp in fam[name].samples:
        if smp.labels == labels and smp.name in (name, name + "_total"):
            return smp.value
    return None


ok(fam["skipper:requests"].type == "counter" and value("skipper:requests") == 6,
   "metrics: six requests ended (%s)" % value("skipper:requests"))
gen = chat_tokens * 2 + c.usage.completion_tokens * 2 + st.usage.completion_tokens + sampled.usage.completion_tokens
ok(value("skipper:generation_tokens") == gen, "metrics: generation tokens %s = the answers' usage %d"
   % (value("skipper:generation_tokens"), gen))
ok(fam["skipper:num_requests_running"].type == "gauge" and value("skipper:num_requests_running") == 0,
   "metrics: nothing running")
for f in ("skipper:spec_decode_num_drafts", "skipper:spec_decode_num_draft_tokens",
          "skipper:spec_decode_num_accepted_tokens"):
    ok(fam[f].type == "counter" and {s.labels["source"] for s in fam[f].samples}
       == {"layer_skip", "lookup", "ngram", "history"}, "metrics: %s by source" % f)
for src in ("layer_skip", "lookup", "ngram", "history"):
    ok(value("skipper:spec_decode_num_accepted_tokens", source=src)
       <= value("skipper:spec_decode_num_draft_tokens", source=src), "metrics: %s accepted <= drafted" % src)
ok(value("skipper:http_requests", code="400") == 4 and value("skipper:http_requests", code="401") == 1,
   "metrics: the answers by status")

# drafts from history ([lookup] history = memory, history_scope = key): a
# user's second request drafts from its first; another user's never does
HIST = "Write a short story about a robot who learns to paint."


def ask(user):
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": HIST}], max_tokens=48,
                                       temperature=0, user=user)
    return r.choices[0].message.content, r.model_extra["skipper"]["sources"]["history"]


first, h1 = ask("alice")
other, h2 = ask("bob")
again, h3 = ask("alice")
ok(first == other == again, "history: the same answer for every user (lossless)")
ok(h1["drafted"] == 0 and h2["drafted"] == 0, "history: a user's first request has none to draft from (%s, %s)"
   % (h1, h2))
ok(h3["accepted"] > 0, "history: alice's second request drafts from her first (%s)" % h3)
# prompt cache ([generate] prefix_cache): a conversation's second turn is
# put where its first left its cache and reads it (OpenAI's
# usage.prompt_tokens_details.cached_tokens); asked again, all of it but
# the last token; the answers the same whatever was read from the cache
TURN1 = [{"role": "user", "content": "Name three rivers in Europe."}]


def chat(messages):
    return client.chat.completions.create(model=model, messages=messages, max_tokens=16, temperature=0)


r1 = chat(TURN1)
turn2 = TURN1 + [{"role": "assistant", "content": r1.choices[0].message.content},
                 {"role": "user", "content": "Which of them is the longest?"}]
r2 = chat(turn2)
r3 = chat(turn2)
c2, c3 = r2.usage.prompt_tokens_details.cached_tokens, r3.usage.prompt_tokens_details.cached_tokens
ok(c2 >= r1.usage.prompt_tokens, "prompt cache: the second turn reads the first's %d prompt tokens (%d cached)"
   % (r1.usage.prompt_tokens, c2))
ok(c3 == r3.usage.prompt_tokens - 1, "prompt cache: the same prompt again reads all but its last token (%d of %d)"
   % (c3, r3.usage.prompt_tokens))
ok(r2.choices[0].message.content == r3.choices[0].message.content,
   "prompt cache: the same answer from %d and %d cached tokens" % (c2, c3))
sys.exit(1 if failed else 0)
