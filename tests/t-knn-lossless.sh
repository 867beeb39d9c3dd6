#!/bin/sh
# knn-router end to end on a tiny generated model: `skipper calibrate`
# with two domains writes the profile and anchors, the router drafts with
# the routed domain's set, and greedy output equals `none`'s token for
# token (`skipper bench` exits 1 on any difference).
set -u
sk="$top_builddir/skipper"
gen="$top_builddir/tests/gen-model"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t-knn-lossless.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..5"
"$gen" --out "$tmp/m.gguf" --layers 4 --embd 64 --ff 128 --redundant 1 --vocab 256 --ctx 256 >/dev/null || exit 1
for i in 1 2 3; do
	echo "{\"domain\": \"cats\", \"category\": \"x\", \"prompt\": \"tell me about cats number $i\"}"
	echo "{\"domain\": \"sums\", \"category\": \"y\", \"prompt\": \"what is $i plus $i plus $i\"}"
done >"$tmp/p.jsonl"

"$sk" calibrate --policy knn-router --data "$tmp/p.jsonl" --domains domain --out "$tmp/out" --iterations 3 \
	--max-tokens 12 --set model.path="$tmp/m.gguf" --set model.threads=1 --set knn-router.calib_prompts=1 \
	--set knn-router.anchors_per_domain=2 --set knn-router.objective=expected --set knn-router.acq_samples=300 \
	>"$tmp/cal.out" 2>"$tmp/cal.err"
rc=$?
tail -2 "$tmp/cal.err" | sed 's/^/# /'
[ "$rc" = 0 ] && [ -f "$tmp/out/knn-router.ini" ] && [ -f "$tmp/out/knn-router.anchors.safetensors" ] &&
	echo "ok 1 - calibrate wrote the profile and the anchors" || echo "not ok 1 - calibrate exit $rc"
grep -q '^\[domain.cats\]' "$tmp/out/knn-router.ini" && grep -q '^\[domain.sums\]' "$tmp/out/knn-router.ini" &&
	echo "ok 2 - one section per --domains value" || echo "not ok 2 - domain sections missing"

printf '[policy]\nname = knn-router\nprofile = %s\n[knn-router]\nthreshold = 0.3\n' "$tmp/out/knn-router.ini" >"$tmp/knn.ini"
# every domain marked as not worth drafting (what calibrate writes when no
# set beats plain decoding there)
sed 's/^\[domain\..*\]$/&\nmax_draft = 0/' "$tmp/out/knn-router.ini" >"$tmp/out/off.ini"
printf '[policy]\nname = knn-router\nprofile = %s\n' "$tmp/out/off.ini" >"$tmp/off.ini"
SKIPPER_DEBUG=1 "$sk" bench --data "$tmp/p.jsonl" --max-tokens 24 --warmup 0 --policies "none,$tmp/knn.ini,$tmp/off.ini" \
	--set model.path="$tmp/m.gguf" --set model.threads=1 >"$tmp/table" 2>"$tmp/err"
rc=$?
grep all "$tmp/table" | sed 's/^/# /'
[ "$rc" = 0 ] && echo "ok 3 - greedy output identical to none (calibrated and drafting-off profiles)" ||
	{ sed 's/^/# /' "$tmp/err"; echo "not ok 3 - bench exit $rc"; }
n=$(grep -c "routed to domain" "$tmp/err")
[ "$n" -ge 6 ] && echo "ok 4 - every request routed and logged ($n)" || echo "not ok 4 - $n routing lines"

"$sk" generate -c "$tmp/off.ini" --set model.path="$tmp/m.gguf" --set model.threads=1 -p "tell me about cats" \
	--max-tokens 16 --stats >"$tmp/off.out" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -Eq '^drafted/accepted +0 / 0' "$tmp/off.out" &&
	echo "ok 5 - max_draft = 0 in the routed domain: no token drafted" ||
	{ sed 's/^/# /' "$tmp/off.out"; echo "not ok 5 - exit $rc"; }
