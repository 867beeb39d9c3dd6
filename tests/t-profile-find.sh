#!/bin/sh
# A policy finds the skip profile for the loaded model by itself when
# [policy] profile is not set: profiles/<sha256>/ and profiles/<stem>/ under
# the skipper cache and $SKIPPER_DATA_PATH, then the hub cache; only a
# profile whose hash, layer count and method fit is taken. Without one the
# error comes before any text. A generated model, so no installed profile
# can match it.
set -u
sk="$top_builddir/skipper"
t=$(mktemp -d "${TMPDIR:-/tmp}/t-profile-find.XXXXXX") || exit 1
trap 'rm -rf "$t"' EXIT
echo "1..12"

"$top_builddir/tests/gen-model" --out "$t/tiny.gguf" --layers 4 --embd 64 --ff 128 --redundant 1 --vocab 256 \
	--ctx 256 >/dev/null || { echo "Bail out! gen-model failed"; exit 1; }
sha=$(sha256sum "$t/tiny.gguf" | cut -d' ' -f1)
export SKIPPER_CACHE_DIR="$t/cache" HF_HUB_CACHE="$t/hub" SKIPPER_DEBUG=1
unset SKIPPER_DATA_PATH HF_HOME XDG_CACHE_HOME

# profile FILE METHOD SHA LAYERS
profile() {
	mkdir -p "$(dirname "$1")"
	printf '[profile]\nmodel = tiny\nmodel_sha256 = %s\nmethod = %s\nn_layers = %s\n\n[mask]\nattn = 1\nmlp = 1\n' \
		"$3" "$2" "$4" >"$1"
}
run() {
	"$sk" generate -m "$t/tiny.gguf" -p "a prompt about cats" -n 12 --set model.threads=1 --set model.backend=cpu \
		--set policy.name=bo-static "$@" >"$t/out" 2>"$t/err"
}
plain=$("$sk" generate -m "$t/tiny.gguf" -p "a prompt about cats" -n 12 --set model.threads=1 \
	--set model.backend=cpu 2>/dev/null)

run
rc=$?
[ "$rc" != 0 ] && [ ! -s "$t/out" ] && grep -q "no skip profile" "$t/err" &&
	echo "ok 1 - no profile anywhere: an error, and no text before it" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 1 - exit $rc, $(wc -c <"$t/out") bytes of output"; }

# found by the model file's name in the cache: decoding equals plain
profile "$t/cache/profiles/tiny/bo-static.ini" bo-static "$sha" 4
run
rc=$?
[ "$rc" = 0 ] && grep -q "profile $t/cache/profiles/tiny/bo-static.ini (found" "$t/err" &&
	[ "$(cat "$t/out")" = "$plain" ] && echo "ok 2 - profiles/STEM/ in the cache, output equal to plain" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 2 - exit $rc"; }

# a directory named by the hash wins over one named by the file
profile "$t/cache/profiles/$sha/bo-static.ini" bo-static "$sha" 4
run
grep -q "profile $t/cache/profiles/$sha/bo-static.ini (found" "$t/err" &&
	echo "ok 3 - profiles/SHA256/ first" || { sed 's/^/# /' "$t/err"; echo "not ok 3"; }
rm -rf "$t/cache/profiles"

# another model's, another layer count's or another method's profile is passed over
profile "$t/cache/profiles/tiny/bo-static.ini" bo-static "$(echo x | sha256sum | cut -d' ' -f1)" 4
profile "$t/data/profiles/tiny/bo-static.ini" bo-static "$sha" 6
profile "$t/data2/profiles/$sha/bo-static.ini" knn-router "$sha" 4
SKIPPER_DATA_PATH="$t/data:$t/data2" run
rc=$?
other=$(echo x | sha256sum | cut -c1-12)
[ "$rc" != 0 ] && grep -q "no skip profile" "$t/err" && [ ! -s "$t/out" ] &&
	grep -q "note: $t/cache/profiles/tiny/bo-static.ini: made for sha256 $other, method bo-static, 4 layers (this model: sha256 $(echo "$sha" | cut -c1-12), 4 layers): not used" "$t/err" &&
	echo "ok 4 - profiles for another model, layer count or method are not taken; the first is named" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 4 - exit $rc"; }

# $SKIPPER_DATA_PATH, a colon list, is searched after the cache
profile "$t/data2/profiles/tiny/bo-static.ini" bo-static "$sha" 4
SKIPPER_DATA_PATH="$t/data:$t/data2" run
rc=$?
[ "$rc" = 0 ] && grep -q "profile $t/data2/profiles/tiny/bo-static.ini (found" "$t/err" &&
	echo "ok 5 - found in the second directory of SKIPPER_DATA_PATH" ||
	{ sed 's/^/# /' "$t/err"; echo "not ok 5 - exit $rc"; }
rm -rf "$t/data2/profiles/tiny"

# the hub cache: the newest fitting one of any repository's snapshots
profile "$t/hub/models--org--old/snapshots/c1/bo-static.ini" bo-static "$sha" 4
touch -d '2020-01-01' "$t/hub/models--org--old/snapshots/c1/bo-static.ini"
profile "$t/hub/models--org--new/snapshots/c2/tiny/bo-static.ini" bo-static "$sha" 4
profile "$t/hub/models--org--other/snapshots/c3/bo-static.ini" bo-static "$(echo y | sha256sum | cut -d' ' -f1)" 4
run
rc=$?
[ "$rc" = 0 ] && grep -q "profile $t/hub/models--org--new/snapshots/c2/tiny/bo-static.ini (found" "$t/err" &&
	echo "ok 6 - the hub cache, newest fitting profile" || { sed 's/^/# /' "$t/err"; echo "not ok 6 - exit $rc"; }

# [hub] cache_dir names the hub cache
mv "$t/hub" "$t/hub2"
run --set hub.cache_dir="$t/hub2"
rc=$?
[ "$rc" = 0 ] && grep -q "profile $t/hub2/models--org--new" "$t/err" &&
	echo "ok 7 - [hub] cache_dir is where the hub cache is" || { sed 's/^/# /' "$t/err"; echo "not ok 7 - exit $rc"; }

# an explicit profile is used as given, and its errors name it
run --set hub.cache_dir="$t/hub2" --set policy.profile="$t/missing.ini"
rc=$?
[ "$rc" != 0 ] && grep -q "$t/missing.ini" "$t/err" && [ ! -s "$t/out" ] &&
	echo "ok 8 - [policy] profile is not second-guessed" || { sed 's/^/# /' "$t/err"; echo "not ok 8 - exit $rc"; }

# calibrate starts from nothing it finds (it writes the profile)
printf '{"category": "c", "prompt": "short prompt about cats"}\n' >"$t/p.jsonl"
"$sk" calibrate --policy bo-static --data "$t/p.jsonl" --out "$t/cal" --iterations 2 --max-tokens 8 \
	--set model.path="$t/tiny.gguf" --set model.threads=1 --set hub.cache_dir="$t/hub2" \
	--set bo-static.calib_prompts=1 --set bo-static.probes=1 --set bo-static.objective=expected \
	>/dev/null 2>"$t/err"
rc=$?
[ "$rc" = 0 ] && ! grep -q "(found for this model)" "$t/err" && echo "ok 9 - calibrate does not look for a profile" ||
	{ sed 's/^/# /' "$t/err" | tail -5; echo "not ok 9 - exit $rc"; }

# a profile of another method named explicitly: refused by name
profile "$t/other.ini" knn-router "$sha" 4
run --set hub.cache_dir="$t/hub2" --set policy.profile="$t/other.ini"
rc=$?
[ "$rc" != 0 ] && grep -q "$t/other.ini: a profile of method knn-router, not bo-static" "$t/err" &&
	echo "ok 10 - an explicit profile of another method is refused" || { sed 's/^/# /' "$t/err"; echo "not ok 10 - exit $rc"; }
# a bad max_draft names the profile's file and section
profile "$t/bad.ini" bo-static "$sha" 4 && echo "max_draft = 99" >>"$t/bad.ini"
run --set hub.cache_dir="$t/hub2" --set policy.profile="$t/bad.ini"
rc=$?
[ "$rc" != 0 ] && grep -q "$t/bad.ini: \[mask\] max_draft: expected an integer in \[0, 32\], got '99'" "$t/err" &&
	echo "ok 11 - a bad profile value names the file and section" || { sed 's/^/# /' "$t/err"; echo "not ok 11 - exit $rc"; }
# a broken file where profiles are looked for is passed over with a warning
mkdir -p "$t/cache3/profiles/tiny" && printf '[profile\n' >"$t/cache3/profiles/tiny/bo-static.ini"
SKIPPER_CACHE_DIR="$t/cache3" run --set hub.cache_dir="$t/hub2"
grep -q "warning: $t/cache3/profiles/tiny/bo-static.ini.*(skipped)" "$t/err" &&
	echo "ok 12 - a broken candidate profile is skipped with a warning" || { sed 's/^/# /' "$t/err"; echo "not ok 12 - no warning"; }
