/* Hub pieces that need no server: untrusted-name checks, listing and
 * profile data names, sizes, signatures, publish refusals, tokens. */
#include <stdarg.h>

#include "harness.h"
#include "hub/hub.h"
#include "hub/publish.h"
#include "hub/sign.h"
#include "tap.h"

static void test_names(void)
{
	static const char *const good[] = {"model.gguf", "sub/dir/a.bin", ".gitattributes", "a..b", "x/..y"};
	static const char *const bad[] = {"", "/etc/passwd", "../x", "a/../b", "a/..", "./a", "a//b", "a/", "a\\b",
	                                  "a\x01", "C:x"};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		ok(skipper_hub_path_ok(good[i]), "path ok: %s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(!skipper_hub_path_ok(bad[i]), "path refused: [%zu]", i);
	ok(skipper_hub_repo_ok("org/name") && skipper_hub_repo_ok("gpt2") && skipper_hub_repo_ok("A-b_c.d/E.f"),
	   "repo ids accepted");
	ok(!skipper_hub_repo_ok("a/b/c") && !skipper_hub_repo_ok("../x") && !skipper_hub_repo_ok("a/..") &&
	       !skipper_hub_repo_ok("") && !skipper_hub_repo_ok("a b/c"),
	   "bad repo ids refused");
	ok(skipper_hub_revision_ok("main") && skipper_hub_revision_ok("refs/pr/1") && skipper_hub_revision_ok("v1.0"),
	   "revisions accepted");
	ok(!skipper_hub_revision_ok("../main") && !skipper_hub_revision_ok("a b") && !skipper_hub_revision_ok("/x"),
	   "bad revisions refused");
	ok(skipper_hub_profile_name_ok("a.ini") && skipper_hub_profile_name_ok("a.ini.sig") &&
	       skipper_hub_profile_name_ok("anchors.safetensors"),
	   "profile data names accepted");
	ok(!skipper_hub_profile_name_ok("policy.so") && !skipper_hub_profile_name_ok("x.sh") &&
	       !skipper_hub_profile_name_ok("run") && !skipper_hub_profile_name_ok("a.so.1"),
	   "executables refused as profile data");
}

static void test_sizes(void)
{
	long long v = 0;
	ok(skipper_hub_parse_size("64G", &v) == 0 && v == 64LL << 30, "64G");
	ok(skipper_hub_parse_size("512k", &v) == 0 && v == 512LL << 10, "512k");
	ok(skipper_hub_parse_size("1024", &v) == 0 && v == 1024, "1024");
	ok(skipper_hub_parse_size("12X", &v) < 0 && skipper_hub_parse_size("", &v) < 0 &&
	       skipper_hub_parse_size("99999999999T", &v) < 0,
	   "bad sizes refused");
	char *enc = skipper_hub_url_encode("a b/c%.gguf", 1);
	is_str(enc, "a%20b/c%25.gguf", "URL encoding keeps slashes when asked");
	free(enc);
}

static int parse(const char *json, long long max, struct skipper_hub_listing *l, struct skipper_error *err)
{
	return skipper_hub_listing_parse(json, strlen(json), max, l, err);
}

static void test_listing(void)
{
	struct skipper_hub_listing l;
	struct skipper_error err;
	const char *sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	char *good = h_fmt("{\"sha\":\"abc123\",\"siblings\":[{\"rfilename\":\"a.gguf\",\"size\":10,"
	                   "\"lfs\":{\"sha256\":\"%s\",\"size\":10}},{\"rfilename\":\"config.json\"}]}",
	                   sha);

	is_int(parse(good, 0, &l, &err), SKIPPER_OK, "good listing parses: %s", err.msg);
	is_int(l.n_files, 2, "two files");
	is_str(l.commit, "abc123", "commit");
	is_str(l.files[0].sha256, sha, "lfs sha256");
	is_int(l.files[0].size, 10, "size");
	is_int(l.files[1].size, -1, "unknown size is -1");
	is_str(l.files[1].sha256, "", "unknown hash is empty");
	skipper_hub_listing_free(&l);
	is_int(parse(good, 5, &l, &err), SKIPPER_ERR_RANGE, "file over max_file_size refused");
	free(good);
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"../x\"}]}", 0, &l, &err), SKIPPER_ERR_FORMAT,
	       "../ refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"/etc/passwd\"}]}", 0, &l, &err), SKIPPER_ERR_FORMAT,
	       "absolute refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"a\\u0000b\"}]}", 0, &l, &err), SKIPPER_ERR_FORMAT,
	       "NUL refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"a\\\\b\"}]}", 0, &l, &err), SKIPPER_ERR_FORMAT,
	       "backslash refused");
	is_int(parse("{\"sha\":\"a/../b\",\"siblings\":[]}", 0, &l, &err), SKIPPER_ERR_FORMAT, "bad commit refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"x\"},{\"rfilename\":\"x\"}]}", 0, &l, &err),
	       SKIPPER_ERR_FORMAT, "duplicate names refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"x\",\"lfs\":{\"sha256\":\"zz\"}}]}", 0, &l, &err),
	       SKIPPER_ERR_FORMAT, "bad sha256 refused");
	is_int(parse("{\"sha\":\"a\",\"siblings\":[{\"rfilename\":\"x\",\"size\":-3}]}", 0, &l, &err),
	       SKIPPER_ERR_FORMAT, "negative size refused");
	is_int(parse("[1,2", 0, &l, &err), SKIPPER_ERR_FORMAT, "truncated JSON refused");
}

static void test_sign(const char *dir)
{
	struct skipper_error err;
	char *key = h_fmt("%s/k.pem", dir), *pub = h_fmt("%s/k.pub", dir), *key2 = h_fmt("%s/k2.pem", dir),
	     *pub2 = h_fmt("%s/k2.pub", dir), *f = h_fmt("%s/p.ini", dir), *sig = h_fmt("%s/p.ini.sig", dir);
	const char *keys[2] = {pub2, pub};
	size_t which = 9;

	is_int(skipper_sign_keygen(key, pub, &err), SKIPPER_OK, "keygen: %s", err.msg);
	is_int(skipper_sign_keygen(key2, pub2, &err), SKIPPER_OK, "second key");
	is_int(skipper_sign_keygen(key, pub, &err), SKIPPER_ERR_IO, "keygen will not overwrite a private key");
	h_write_str(f, "[profile]\nmodel = x\n");
	is_int(skipper_sign_file(key, f, NULL, &err), SKIPPER_OK, "sign: %s", err.msg);
	is_int(skipper_sign_verify(f, NULL, keys, 2, &which, &err), SKIPPER_OK, "verify with a key list");
	is_int(which, 1, "the right key matched");
	is_int(skipper_sign_verify(f, NULL, keys, 1, NULL, &err), SKIPPER_ERR_SIGNATURE, "other key does not verify");
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_OK, "own key verifies");
	is_int(skipper_sign_verify(f, NULL, (const char *const[]){key}, 1, NULL, &err), SKIPPER_ERR_CONFIG,
	       "a private key is not a public key");
	h_write_str(f, "[profile]\nmodel = y\n");
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_ERR_SIGNATURE, "tampered file refused");
	h_write_str(sig, "garbage\n");
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_ERR_SIGNATURE, "garbage signature refused");

	/* the .sig is read whole: its line and nothing else (only the first
	 * line was read, so anything could follow it) */
	char line[100] = "", *text;
	FILE *sf;
	h_write_str(f, "[profile]\nmodel = z\n");
	is_int(skipper_sign_file(key, f, NULL, &err), SKIPPER_OK, "signed again");
	if ((sf = fopen(sig, "r"))) {
		if (!fgets(line, sizeof line, sf))
			line[0] = '\0';
		fclose(sf);
	}
	line[strcspn(line, "\n")] = '\0';
	is_int(strlen(line), 88, "a .sig is one line of 88 characters");
	h_write_str(sig, text = h_fmt("%s\nmore\n", line)), free(text);
	ok(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err) == SKIPPER_ERR_SIGNATURE &&
	       strstr(err.msg, "more than any valid one"),
	   "a line after the signature: refused (%s)", err.msg);
	h_write_str(sig, text = h_fmt("%s\n\n", line)), free(text);
	ok(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err) == SKIPPER_ERR_SIGNATURE &&
	       strstr(err.msg, "more than the signature line"),
	   "even an empty one (%s)", err.msg);
	h_write_str(sig, text = h_fmt("%s\r\n", line)), free(text);
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_OK, "a CRLF line end is fine");
	h_write_str(sig, line);
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_OK, "so is none");
	line[10] = '=';
	h_write_str(sig, text = h_fmt("%s\n", line)), free(text);
	is_int(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err), SKIPPER_ERR_SIGNATURE, "padding inside the line");
	unlink(sig);
	mkfifo(sig, 0600);
	ok(skipper_sign_verify(f, NULL, &keys[1], 1, NULL, &err) == SKIPPER_ERR_SIGNATURE &&
	       strstr(err.msg, "not a regular file"),
	   "a FIFO as .sig: refused, not waited on (%s)", err.msg);
	unlink(sig);
	char *none = h_fmt("%s/none.ini", dir);
	ok(skipper_sign_verify(none, NULL, &keys[1], 1, NULL, &err) == SKIPPER_ERR_NOT_FOUND,
	   "a missing file is missing, not unsigned (%s)", err.msg);
	free(none);
	char *nokey = h_fmt("%s/nokey.pem", dir);
	ok(skipper_sign_check_keys((const char *const[]){ nokey }, 1, &err) == SKIPPER_ERR_CONFIG &&
	       strstr(err.msg, "nokey.pem: No such file"),
	   "a trusted key that is not there is named (%s)", err.msg);
	free(nokey);
	is_int(skipper_sign_check_trusted(f, &keys[1], 1, &err), SKIPPER_ERR_SIGNATURE, "unsigned refused with keys");
	is_int(skipper_sign_check_trusted(f, NULL, 0, &err), SKIPPER_OK, "unsigned accepted without keys");
	free(key), free(pub), free(key2), free(pub2), free(f), free(sig);
}

static void test_publish(const char *dir)
{
	struct skipper_error err;
	char *src = h_fmt("%s/pub-src", dir), *out = h_fmt("%s/pub-out", dir), *p;
	char c1[41], c2[41];

	h_write_str(p = h_fmt("%s/a.ini", src), "[profile]\n"), free(p);
	is_int(skipper_hub_publish(src, out, "org/p", "main", 1, c1, &err), SKIPPER_OK, "publish: %s", err.msg);
	is_int(skipper_hub_publish(src, out, "org/p", "main", 1, c2, &err), SKIPPER_OK, "publish again");
	is_str(c1, c2, "same content, same commit");
	p = h_fmt("%s/org/p/resolve/main/a.ini", out);
	ok(access(p, R_OK) == 0, "resolve/main/a.ini exists");
	free(p);
	h_write_str(p = h_fmt("%s/plugin.so", src), "ELF"), free(p);
	is_int(skipper_hub_publish(src, out, "org/p", "main", 1, NULL, &err), SKIPPER_ERR_ARG, "a .so is not published");
	ok(strstr(err.msg, "plugin.so"), "message names it: %s", err.msg);
	free(src);
	free(out);
}

static void test_token(const char *dir)
{
	struct skipper_error err;
	char *tok = NULL, *f = h_fmt("%s/token", dir);

	unsetenv("HF_TOKEN");
	h_write_str(f, "  filetoken\n");
	is_int(skipper_hub_token_load(f, &tok, &err), SKIPPER_OK, "token file read");
	is_str(tok, "filetoken", "token trimmed");
	skipper_hub_token_free(tok);
	setenv("HF_TOKEN", "envtoken", 1);
	skipper_hub_token_load(f, &tok, &err);
	is_str(tok, "filetoken", "a configured token file wins over HF_TOKEN");
	skipper_hub_token_free(tok);
	skipper_hub_token_load(NULL, &tok, &err);
	is_str(tok, "envtoken", "HF_TOKEN wins over the default token file");
	skipper_hub_token_free(tok);
	unsetenv("HF_TOKEN");
	free(f);
	f = h_fmt("%s/no-such-token", dir);
	is_int(skipper_hub_token_load(f, &tok, &err), SKIPPER_ERR_IO, "a configured token file must exist");
	setenv("HF_HOME", dir, 1);
	free(f);
	f = h_fmt("%s/token", dir);
	unlink(f);
	is_int(skipper_hub_token_load(NULL, &tok, &err), SKIPPER_OK, "no token at all is fine");
	unsetenv("HF_HOME");
	ok(tok == NULL, "and gives none");
	free(f);
}

int main(void)
{
	char tmpl[] = "/tmp/skipper-hubu-XXXXXX";
	char *dir = mkdtemp(tmpl), *cmd;

	if (!dir)
		h_bail("mkdtemp");
	test_names();
	test_sizes();
	test_listing();
	test_sign(dir);
	test_publish(dir);
	test_token(dir);
	cmd = h_fmt("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	free(cmd);
	return tap_done();
}
