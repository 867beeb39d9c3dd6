#!/bin/sh
# skipper vocab ranks a model's vocabulary over a corpus; [generate]
# draft_vocab reads such a ranking (named, or found beside the model's
# profiles) and drafts over its first N ids without changing the output;
# bad rankings are errors naming the file and line. skipper vocab --ngrams
# counts what the model writes after each context, [lookup] ngrams drafts
# from it (named, or found as ngrams.txt beside the profiles), again
# without changing the output. A generated model.
set -u
sk="$top_builddir/skipper"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-vocab.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
echo "1..39"

"$top_builddir/tests/gen-model" --out "$t/tiny.gguf" --layers 4 --embd 64 --ff 128 --redundant 1 --vocab 256 \
	--ctx 256 >/dev/null || { echo "Bail out! gen-model failed"; exit 1; }
export SKIPPER_CACHE_DIR="$t/cache" HF_HUB_CACHE="$t/hub"
unset SKIPPER_DATA_PATH HF_HOME XDG_CACHE_HOME
common="-m $t/tiny.gguf --set model.threads=1 --set model.backend=cpu"

# check N DESCRIPTION COMMAND...: ok when the command succeeds
check() {
	n=$1 what=$2
	shift 2
	if "$@" >"$t/out" 2>"$t/err"; then echo "ok $n - $what"; else
		sed 's/^/# /' "$t/err"; echo "not ok $n - $what"; fi
}
# fails N DESCRIPTION PATTERN COMMAND...: ok when it fails, prints nothing on
# stdout and says PATTERN on stderr
fails() {
	n=$1 what=$2 pat=$3
	shift 3
	"$@" >"$t/out" 2>"$t/err"
	rc=$?
	if [ "$rc" != 0 ] && [ ! -s "$t/out" ] && grep -q -- "$pat" "$t/err"; then echo "ok $n - $what"; else
		sed 's/^/# /' "$t/err"; echo "not ok $n - $what (exit $rc)"; fi
}

printf '%s\n' '{"question_id": 1, "category": "a", "turns": ["cats and dogs"]}' \
	'{"question_id": 2, "category": "a", "turns": ["dogs and dogs and dogs"]}' >"$t/p.jsonl"
check 1 "vocab over JSONL prompts with generated tokens" $sk vocab $common --data "$t/p.jsonl" --generate 8 \
	--out "$t/v.txt"

# every id once, counts never rising, the header names the corpus
V=$(sed -n "s/^# model .*(\([0-9]*\) tokens).*/\1/p" "$t/v.txt")
awk -v V="${V:-0}" '/^#/ { next } { if (seen[$1]++ || $1 < 0 || $1 >= V) bad = 1; if (NR > 3 && $2 > last) bad = 1;
	last = $2; n++ } END { exit !(n == V && !bad) }' "$t/v.txt" && grep -q "^# model .*2 prompts" "$t/v.txt" &&
	echo "ok 2 - the ranking holds every id once, most frequent first" ||
	{ head -4 "$t/v.txt" | sed 's/^/# /'; echo "not ok 2 - the ranking is malformed"; }

printf 'dogs dogs dogs dogs cats\n' >"$t/c.txt"
$sk vocab $common --data "$t/c.txt" --out "$t/vt.txt" >/dev/null 2>"$t/err"
first=$(grep -v '^#' "$t/vt.txt" | head -1 | cut -d' ' -f1)
[ -s "$t/vt.txt" ] && [ -n "$first" ] && grep -v '^#' "$t/vt.txt" | head -1 | grep -q ' [1-9]' &&
	echo "ok 3 - vocab over a text file counts its tokens (first id $first)" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 3 - text corpus"; }

fails 4 "vocab without --out" "required" $sk vocab $common --data "$t/p.jsonl"
fails 5 "vocab of a missing corpus names it" "$t/none.txt" $sk vocab $common --data "$t/none.txt" --out "$t/x.txt"
[ ! -e "$t/x.txt" ] && echo "ok 6 - no output file after a failure" || echo "not ok 6 - $t/x.txt left behind"

# drafting over the 40 most frequent ids: the text of plain decoding
gen="$sk generate $common -p cats -n 24 --set policy.name=fixed --set fixed.attn=1-2 --set fixed.draft_length=4
	--set policy.guard=no"
plain=$($sk generate $common -p cats -n 24 2>/dev/null)
check 7 "draft_vocab = 40 with a named ranking" $gen --set generate.draft_vocab=40 \
	--set generate.draft_vocab_file="$t/v.txt"
[ -n "$plain" ] && [ "$(cat "$t/out")" = "$plain" ] && echo "ok 8 - ... and the text is plain decoding's" ||
	echo "not ok 8 - text differs from plain decoding"

fails 9 "draft_vocab with no ranking for the model says how to make one" "skipper vocab" \
	$gen --set generate.draft_vocab=40
mkdir -p "$t/cache/profiles/tiny" && cp "$t/v.txt" "$t/cache/profiles/tiny/draft-vocab.txt"
check 10 "the ranking beside the model's profiles is found" $gen --set generate.draft_vocab=40

{ echo "# a comment"; echo "3 9"; echo "7 5"; echo "3 1"; } >"$t/dup.txt"
fails 11 "a repeated id is an error naming file and line" "dup.txt:4: a repeated token id" \
	$gen --set generate.draft_vocab=3 --set generate.draft_vocab_file="$t/dup.txt"
head -3 "$t/dup.txt" >"$t/short.txt"
fails 12 "a ranking shorter than draft_vocab is an error" "2 token ids, \[generate\] draft_vocab asks for 40" \
	$gen --set generate.draft_vocab=40 --set generate.draft_vocab_file="$t/short.txt"

# corpus n-grams: what the model wrote, read back by lookup; the corpus
# asks what the test asks below, twice, so every context came twice
printf '%s\n' '{"question_id": 1, "category": "a", "turns": ["cats"]}' \
	'{"question_id": 2, "category": "a", "turns": ["cats"]}' >"$t/p2.jsonl"
check 13 "vocab --ngrams counts the generated text" $sk vocab $common --data "$t/p2.jsonl" --generate 24 \
	--out "$t/v2.txt" --ngrams "$t/ng.txt"
awk '/^#/ { h++; next } { if (NF < 4 || NF > 7 || $2 < 2 || $2 > $3) bad = 1; n++ } END { exit !(h == 2 && n > 0 && !bad) }' \
	"$t/ng.txt" && grep -q "^# model .*2 prompts, [1-9][0-9]* tokens written" "$t/ng.txt" &&
	echo "ok 14 - the n-gram file has its header and well-formed lines ($(grep -vc '^#' "$t/ng.txt"))" ||
	{ head -4 "$t/ng.txt" | sed 's/^/# /'; echo "not ok 14 - the n-gram file is malformed"; }
fails 15 "--ngrams without --generate" "needs --generate" $sk vocab $common --data "$t/p.jsonl" --out "$t/y.txt" \
	--ngrams "$t/y.ng"
[ ! -e "$t/y.txt" ] && [ ! -e "$t/y.ng" ] && echo "ok 16 - ... and writes nothing" || echo "not ok 16 - files left behind"

# the model's own text as corpus: lookup drafts from it and the text stays plain decoding's
lk="$sk generate $common -p cats -n 24 --stats --set policy.name=lookup --set policy.guard=no"
check 17 "[lookup] ngrams names a file" $lk --set lookup.ngrams="$t/ng.txt"
if [ -n "$plain" ] && [ "$(cat "$t/out")" = "$plain" ] &&
	grep -q "of which corpus n-grams [1-9][0-9]* / " "$t/err"; then
	echo "ok 18 - ... drafts from it and the text is plain decoding's ($(grep -o 'corpus n-grams [0-9]* / [0-9]*' "$t/err"))"
else
	sed 's/^/# /' "$t/err"; echo "not ok 18 - corpus n-gram drafts or text"
fi
cp "$t/ng.txt" "$t/bad.txt" && echo "5 3 2 1" >>"$t/bad.txt"
fails 19 "a count above its total is an error naming file and line" \
	"bad.txt:$(wc -l <"$t/bad.txt"): count must be 1..total" $lk --set lookup.ngrams="$t/bad.txt"
fails 20 "a missing n-gram file is an error naming it" "\[lookup\] ngrams $t/none.txt" \
	$lk --set lookup.ngrams="$t/none.txt"
cp "$t/ng.txt" "$t/cache/profiles/tiny/ngrams.txt"
$lk >/dev/null 2>"$t/err"
grep -q "of which corpus n-grams [1-9][0-9]* / " "$t/err" &&
	echo "ok 21 - the model's ngrams.txt beside its profiles is found by itself" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 21 - ngrams.txt not found"; }
$lk --set lookup.ngrams=off >/dev/null 2>"$t/err"
grep -q "of which corpus n-grams 0 / 0" "$t/err" && echo "ok 22 - [lookup] ngrams = off drafts no n-grams" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 22 - ngrams = off"; }

# bad input of other kinds: a clear error naming file and line, a non-zero
# exit, nothing left behind
echo "1 99999999999999999999 99999999999999999999 1" >"$t/big.txt"
fails 23 "a number too large for its field is an error naming file and line" "big.txt:1: number out of range" \
	$lk --set lookup.ngrams="$t/big.txt"
printf '1 2 3 4\0 5\n' >"$t/nul.txt"
fails 24 "a NUL byte in an n-gram file is an error naming the line" "nul.txt:1: NUL byte in line" \
	$lk --set lookup.ngrams="$t/nul.txt"
head -c 4096 /dev/zero | tr '\0' '7' >"$t/long.txt"
fails 25 "an endless line is refused, not read to the end of memory" "long.txt:1: line too long" \
	$lk --set lookup.ngrams="$t/long.txt"
fails 26 "so is one of a draft vocabulary" "long.txt:1: line too long" \
	$gen --set generate.draft_vocab=3 --set generate.draft_vocab_file="$t/long.txt"
fails 27 "a directory as n-gram file says why" "is a directory" $lk --set lookup.ngrams="$t"
fails 28 "a count option that is not a number" "--limit: expected a whole number, got 'abc'" \
	$sk vocab $common --data "$t/p.jsonl" --out "$t/z.txt" --limit abc
fails 29 "a corpus with nothing to count" "no tokens to count (--skip passes every prompt)" \
	$sk vocab $common --data "$t/p.jsonl" --out "$t/z.txt" --skip 5
fails 30 "an n-gram file that cannot be written is an error naming it" "$t/no/ng.txt: No such file" \
	$sk vocab $common --data "$t/p2.jsonl" --generate 4 --out "$t/z.txt" --ngrams "$t/no/ng.txt"
[ ! -e "$t/z.txt" ] && [ -z "$(ls "$t" | grep '\.tmp')" ] && echo "ok 31 - ... and neither output is left behind" ||
	echo "not ok 31 - files left behind: $(ls "$t")"

# [generate] draft_vocab = auto (the default): the model's ranking, all of
# it, for a policy that drafts with the model; none and lookup do not read it
{ grep '^#' "$t/v.txt"; grep -v '^#' "$t/v.txt" | head -40; } >"$t/cache/profiles/tiny/draft-vocab.txt"
check 32 "auto drafts over the ranking beside the model" $gen --stats
grep -q "^draft head  *40 most frequent tokens" "$t/err" && [ "$(cat "$t/out")" = "$plain" ] &&
	echo "ok 33 - ... all 40 of its ids, and the text is plain decoding's" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 33 - auto's draft head or text"; }
echo "# only a comment" >"$t/cache/profiles/tiny/draft-vocab.txt"
fails 34 "auto with a ranking that holds no id is an error naming it" "draft-vocab.txt: no token ids" $gen
check 35 "... which plain decoding does not read" $sk generate $common -p cats -n 4 --stats
grep -q "^draft head  *the whole vocabulary" "$t/err" && echo "ok 36 - ... and its draft head is the whole" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 36 - plain decoding's draft head"; }
check 37 "draft_vocab = 0 is the whole vocabulary, ranking or not" $gen --set generate.draft_vocab=0 --stats
grep -q "^draft head  *the whole vocabulary" "$t/err" && echo "ok 38 - ... as --stats says" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 38 - draft_vocab = 0's draft head"; }
fails 39 "a draft_vocab that is neither a number nor auto" "draft_vocab: 'most' is not an integer or auto" \
	$gen --set generate.draft_vocab=most
