#!/bin/sh
# skipper bench --dump-prompts: the prompts a run would select (--categories,
# --per-category, --limit, in run order), each with the chat template and
# system prompt applied and the token ids the run feeds the engine, as JSON
# lines, without running anything (scripts/bench-peers.py gives them to
# llama.cpp). On the default model, SmolLM2-135M (its template has a
# default system prompt).
: "${top_srcdir:=.}" "${top_builddir:=.}" "${PYTHON3:=python3}"
set -u
model="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ -f "$model" ] || { echo "1..0 # SKIP $model not found (scripts/fetch-model.sh fetches it)"; exit 0; }
[ -n "$PYTHON3" ] && command -v "$PYTHON3" >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
S="$top_builddir/skipper"
data="$top_srcdir/tests/data/specbench-20.jsonl"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-bench-dump.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
echo "1..11"
sk() { "$S" "$@" --set model.path="$model" --set model.threads=1 --set model.backend=cpu; }
ok() { # N DESCRIPTION: ok when the last command succeeded, else the errors
	if [ "$rc" = 0 ]; then echo "ok $1 - $2"; else sed 's/^/# /' "$t/err"; echo "not ok $1 - $2"; fi
}
py() { "$PYTHON3" -c "$@" >"$t/err" 2>&1; rc=$?; return $rc; }

sk bench --data "$data" --categories writing,math --per-category 2 --policies none,lookup --dump-prompts - \
	>"$t/wm.jsonl" 2>"$t/err"
rc=$?
ok 1 "dump to standard output"
py 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["category"], r["id"]) for r in rows]
want = [("writing", "81"), ("math", "111"), ("writing", "82"), ("math", "112")]
assert got == want, got' "$t/wm.jsonl"
ok 2 "--categories and --per-category select as a run does, in run order (category by category in turn)"
sk bench --data "$data" --limit 3 --dump-prompts - >"$t/l3.jsonl" 2>"$t/err"
py 'import json, sys
got = [json.loads(l)["id"] for l in open(sys.argv[1])]
assert got == ["81", "91", "101"], got' "$t/l3.jsonl"
ok 3 "--limit takes one prompt of each category in turn"
py 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    assert r["template"] == "chatml" and r["system"].startswith("You are a helpful AI assistant named SmolLM"), r
    want = ("<|im_start|>system\n" + r["system"] + "<|im_end|>\n<|im_start|>user\n" + r["user"] +
            "<|im_end|>\n<|im_start|>assistant\n")
    assert r["prompt"] == want, (r["prompt"], want)
    assert r["add_bos"] is False, r["add_bos"]
    src = [json.loads(x) for x in open(sys.argv[2])]
    assert r["user"] == next(s["turns"][0] for s in src if str(s["question_id"]) == r["id"])' \
	"$t/wm.jsonl" "$data"
ok 4 "the prompt is the user turn in the model's ChatML template with its default system prompt"

# the ids are the run's: those skipper bench --out records for the same
# prompts, and as many as skipper generate --json counts
sk bench --data "$data" --categories writing,math --per-category 2 --policies none --max-tokens 1 --warmup 0 \
	--out "$t/run" >/dev/null 2>"$t/err"
rc=$?
ok 5 "the same selection runs"
py 'import json, sys
dump = [json.loads(l) for l in open(sys.argv[1])]
run = [json.loads(l) for l in open(sys.argv[2])]
assert [r["id"] for r in run] == [r["id"] for r in dump]
for d, r in zip(dump, run):
    assert d["prompt_ids"] == r["prompt_ids"], d["id"]
    assert d["prompt_ids"][0] == 1, "<|im_start|> is one special token: " + repr(d["prompt_ids"][:4])' \
	"$t/wm.jsonl" "$t/run.jsonl"
ok 6 "prompt_ids equal the ids skipper bench runs"
"$PYTHON3" -c 'import json, sys; sys.stdout.write(json.loads(open(sys.argv[1]).readline())["user"])' "$t/wm.jsonl" >"$t/user.txt"
sk generate -f "$t/user.txt" -n 1 --json >"$t/gen.json" 2>"$t/err"
py 'import json, sys
d = json.loads(open(sys.argv[1]).readline())
g = json.load(open(sys.argv[2]))
assert len(d["prompt_ids"]) == g["stats"]["prompt_tokens"], (len(d["prompt_ids"]), g["stats"])' \
	"$t/wm.jsonl" "$t/gen.json"
ok 7 "as many prompt tokens as skipper generate --json counts for the same text"

sk bench --data "$data" --limit 1 --set generate.chat_template=none --dump-prompts "$t/raw.jsonl" >"$t/out" 2>"$t/err"
if [ "$?" = 0 ] && [ ! -s "$t/out" ]; then
	py 'import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["template"] == "none" and r["system"] is None and r["prompt"] == r["user"], r' "$t/raw.jsonl"
else rc=1; fi
ok 8 "to a file, nothing on standard output; without a template the prompt is the user text"

# errors: nothing written
sk bench --data "$data" --limit 1 --dump-prompts "$t/nodir/d.jsonl" >"$t/out" 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && grep -q "$t/nodir/d.jsonl: No such file or directory" "$t/err" && [ ! -e "$t/nodir" ] && rc=0 || rc=1
ok 9 "a file that cannot be written is an error naming it"
"$S" bench --data "$data" --dump-prompts "$t/d.jsonl" -m /nonexistent.gguf >"$t/out" 2>"$t/err"
rc=$?
[ "$rc" = 1 ] && grep -q /nonexistent.gguf "$t/err" && [ -z "$(ls "$t" | grep '^d\.jsonl')" ] && rc=0 || rc=1
ok 10 "a model that does not load leaves no file"
"$S" bench --data "$data" --dump-prompts - --out "$t/x" >"$t/out" 2>"$t/err"
rc=$?
[ "$rc" = 2 ] && grep -q -- "--dump-prompts runs nothing" "$t/err" && rc=0 || rc=1
ok 11 "--dump-prompts with --out is a usage error"
