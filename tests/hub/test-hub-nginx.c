/* Hub client against a real nginx on 127.0.0.1 (issue 4's test list): the
 * tree is written by skipper_hub_publish plus hand-made faults, nginx serves
 * it, and every check looks at the cache and nginx's access log. */
#include <dirent.h>
#include <stdarg.h>

#include <openssl/evp.h>

#include "base/error.h"
#include "base/sha256.h"
#include "harness.h"
#include "hub/hub.h"
#include "hub/publish.h"
#include "hub/sign.h"
#include "tap.h"

#define BIG_SIZE (8u << 20)

static char *root, *tree, *tree2, *access1, *access2, *proxy_exe;
static int port1, port2;
static char endpoint[64];
static char model_commit[41], model_sha[65];

struct result {
	int calls, downloaded;
	char path[4096];
};

static void on_file(void *arg, const char *file, const char *path, int downloaded)
{
	struct result *r = arg;
	r->calls++;
	r->downloaded += downloaded;
	snprintf(r->path, sizeof r->path, "%s", path);
}

/* The notes of the last pull (why it retried): their count and the last. */
static struct {
	int n;
	char last[SKIPPER_ERROR_MAX + 64];
} notes;

static void on_note(void *arg, const char *msg)
{
	(void)arg;
	notes.n++;
	snprintf(notes.last, sizeof notes.last, "%s", msg);
}

/* One pull with fresh options; returns the status, fills r and err. */
static int pull(const char *ep, const char *cache, const char *token, int offline, int retries, const char *repo,
                const char *file, struct result *r, struct skipper_error *err)
{
	struct skipper_hub_options o = {.endpoint = ep, .cache_dir = cache, .token = token, .offline = offline,
	                                .retries = retries, .timeout_s = 10, .backoff_ms = 20, .note = on_note};
	struct skipper_hub_request req = {.repo = repo, .files = file ? &file : NULL, .n_files = file ? 1 : 0};
	struct skipper_hub *hub;
	int rc;

	memset(r, 0, sizeof *r);
	memset(&notes, 0, sizeof notes);
	skipper_error_clear(err);
	if ((rc = skipper_hub_new(&hub, &o, err)))
		return rc;
	rc = skipper_hub_pull(hub, &req, on_file, r, err);
	skipper_hub_free(hub);
	return rc;
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static char *sha_of(const char *path)
{
	static char hex[65];
	struct skipper_error err;
	if (skipper_sha256_file(path, hex, &err))
		return "";
	return hex;
}

static void publish(const char *src, const char *dst, const char *repo, int profiles_only, char *commit)
{
	struct skipper_error err = {0};
	if (skipper_hub_publish(src, dst, repo, "main", profiles_only, commit, &err)) {
		printf("Bail out! publish %s: %s\n", repo, err.msg);
		exit(99);
	}
}

static void make_trees(void)
{
	unsigned char *big = h_bytes(BIG_SIZE, 42);
	char *src = h_fmt("%s/src", root), *p;
	char commit[41];

	/* org/model: a multi-megabyte file plus small ones in subdirectories. */
	h_write(p = h_fmt("%s/model/model.gguf", src), big, BIG_SIZE), free(p);
	h_write_str(p = h_fmt("%s/model/config.json", src), "{\"n_layers\": 4}\n"), free(p);
	h_write_str(p = h_fmt("%s/model/sub/dir/notes.txt", src), "notes\n"), free(p);
	publish(p = h_fmt("%s/model", src), tree, "org/model", 0, model_commit), free(p);
	snprintf(model_sha, sizeof model_sha, "%s", sha_of(p = h_fmt("%s/model/model.gguf", src))), free(p);
	/* priv/model: same content behind a token check. */
	publish(p = h_fmt("%s/model", src), tree, "priv/model", 0, NULL), free(p);
	/* org/redir: the file answers with a redirect to the second server. */
	publish(p = h_fmt("%s/model", src), tree, "org/redir", 0, commit), free(p);
	publish(p = h_fmt("%s/model", src), tree2, "org/redir", 0, NULL), free(p);
	/* org/badsum: the served bytes no longer match the listing. */
	publish(p = h_fmt("%s/model", src), tree, "org/badsum", 0, commit), free(p);
	p = h_fmt("%s/org/badsum/resolve/%s/model.gguf", tree, commit);
	unlink(p); /* a hard link to the source: write a new file */
	big[12345] ^= 1;
	h_write(p, big, BIG_SIZE);
	free(p);
	/* org/evil: a listing that tries to climb out of the cache. */
	h_write_str(p = h_fmt("%s/api/models/org/evil/revision/main", tree),
	            "{\"sha\": \"0123456789012345678901234567890123456789\", \"siblings\": ["
	            "{\"rfilename\": \"ok.txt\"}, {\"rfilename\": \"../../../evil.txt\", \"size\": 4}]}");
	free(p);
	free(big);
	free(src);
	/* org/liar: the listing understates a size; the stream must be cut. */
	h_write_str(p = h_fmt("%s/org/liar/resolve/%s/config.json", tree, model_commit), "{\"n_layers\": 4}\n"), free(p);
	{
		char *json = h_fmt("{\"sha\": \"%s\", \"siblings\": [{\"rfilename\": \"config.json\", \"size\": 5}]}",
		                   model_commit);
		h_write_str(p = h_fmt("%s/api/models/org/liar/revision/main", tree), json), free(p);
		free(json);
	}
	/* org/gitblob: small files the way the public hub lists non-LFS files,
	 * with a git blob id instead of a SHA-256 (one right, one wrong). */
	{
		const char *c = "1111111111111111111111111111111111111111", *text = "{\"small\": true}\n";
		unsigned char md[20];
		char hex[41], *head = h_fmt("blob %zu", strlen(text));
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
		EVP_DigestUpdate(ctx, head, strlen(head) + 1);
		EVP_DigestUpdate(ctx, text, strlen(text));
		EVP_DigestFinal_ex(ctx, md, NULL);
		EVP_MD_CTX_free(ctx);
		for (int i = 0; i < 20; i++)
			snprintf(hex + 2 * i, 3, "%02x", md[i]);
		h_write_str(p = h_fmt("%s/org/gitblob/resolve/%s/good.json", tree, c), text), free(p);
		h_write_str(p = h_fmt("%s/org/gitblob/resolve/%s/bad.json", tree, c), text), free(p);
		h_write_str(p = h_fmt("%s/api/models/org/gitblob/revision/main", tree),
		            text = h_fmt("{\"sha\": \"%s\", \"siblings\": [{\"rfilename\": \"good.json\", \"size\": %zu, "
		                         "\"blobId\": \"%s\"}, {\"rfilename\": \"bad.json\", \"size\": %zu, "
		                         "\"blobId\": \"0000000000000000000000000000000000000000\"}]}",
		                         c, strlen("{\"small\": true}\n"), hex, strlen("{\"small\": true}\n")));
		free(p);
		free((char *)text);
		free(head);
	}
}

static void write_profiles(const char *key, const char *pub)
{
	struct skipper_error err = {0};
	char *dir = h_fmt("%s/src/profiles", root), *p;
	const char *ini = "[profile]\nmodel = tiny\nmethod = swift\nn_layers = 16\n\n[mask]\nattn = 3,5,7-12\nmlp = 4\n";

	if (skipper_sign_keygen(key, pub, &err)) {
		printf("Bail out! keygen: %s\n", err.msg);
		exit(99);
	}
	h_write_str(p = h_fmt("%s/signed.ini", dir), ini);
	skipper_sign_file(key, p, NULL, &err);
	free(p);
	h_write_str(p = h_fmt("%s/unsigned.ini", dir), ini), free(p);
	h_write_str(p = h_fmt("%s/tampered.ini", dir), ini);
	skipper_sign_file(key, p, NULL, &err);
	h_write_str(p, "[profile]\nmodel = tiny\nmethod = swift\nn_layers = 16\n\n[mask]\nattn = 0-15\n");
	free(p);
	publish(dir, tree, "org/profiles", 1, NULL);
	free(dir);
}

static void start_nginx(pid_t *pid)
{
	char *conf = h_fmt("%s/nginx.conf", root), *err = h_fmt("%s/error.log", root), *text;
	char *argv[] = {getenv("NGINX"), "-p", root, "-c", conf, "-e", err, NULL};

	text = h_fmt(
	    "daemon off;\nmaster_process off;\npid %s/nginx.pid;\nerror_log %s;\n"
	    "events { worker_connections 128; }\n"
	    "http {\n"
	    "  default_type application/octet-stream;\n"
	    "  log_format hub '$server_port \"$request\" $status $body_bytes_sent range=\"$http_range\" auth=\"$http_authorization\"';\n"
	    "  client_body_temp_path %s/tmp; proxy_temp_path %s/tmp; fastcgi_temp_path %s/tmp;\n"
	    "  uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
	    "  server {\n    listen 127.0.0.1:%d;\n    root %s;\n    access_log %s hub;\n"
	    "    location /priv/ { if ($http_authorization != \"Bearer testtoken\") { return 401; } }\n"
	    "    location /api/models/priv/ { if ($http_authorization != \"Bearer testtoken\") { return 401; } }\n"
	    "    location /org/redir/resolve/ { rewrite ^/(.*)$ http://localhost:%d/$1 redirect; }\n"
	    "  }\n"
	    "  server {\n    listen 127.0.0.1:%d;\n    root %s;\n    access_log %s hub;\n  }\n"
	    "}\n",
	    root, err, root, root, root, root, root, port1, tree, access1, port2, port2, tree2, access2);
	h_write_str(conf, text);
	free(text);
	h_mkdirs(text = h_fmt("%s/tmp", root)), free(text);
	*pid = h_spawn(argv);
	free(conf);
	free(err);
}

/* Free ports are only free until someone takes them (other tests run in
 * parallel): an nginx that exits at once lost its port, so try others. The
 * pause after the ports answer makes sure they answer for our nginx. */
static pid_t start_nginx_retry(void)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		pid_t pid;
		int status;
		port1 = h_free_port();
		do
			port2 = h_free_port();
		while (port2 == port1);
		snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", port1);
		start_nginx(&pid);
		if (h_wait_port(port1, 100) == 0 && h_wait_port(port2, 100) == 0) {
			usleep(200000);
			if (waitpid(pid, &status, WNOHANG) == 0)
				return pid;
		}
		h_stop(pid);
	}
	printf("Bail out! nginx did not start (see %s/error.log)\n", root);
	exit(99);
}

static char *cache_path(const char *name)
{
	return h_fmt("%s/cache-%s", root, name);
}

static void test_normal_and_cached(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("main"), *ref, *p;
	int before;

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/model", "model.gguf", &r, &err), SKIPPER_OK, "normal pull: %s",
	       err.msg);
	is_int(r.downloaded, 1, "the file was downloaded");
	is_str(sha_of(r.path), model_sha, "snapshot file has the listed SHA-256");
	ref = h_read(p = h_fmt("%s/models--org--model/refs/main", cache), NULL), free(p);
	is_str(ref, model_commit, "refs/main names the commit");
	free(ref);
	p = h_fmt("%s/models--org--model/blobs/%s", cache, model_sha);
	ok(access(p, F_OK) == 0, "content stored as blobs/<sha256>");
	free(p);
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/model", "sub/dir/notes.txt", &r, &err), SKIPPER_OK,
	       "file in a subdirectory: %s", err.msg);
	before = h_count_all_lines(access1);
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/model", "model.gguf", &r, &err), SKIPPER_OK, "pull again");
	is_int(r.downloaded, 0, "second pull reports the file as cached");
	is_int(h_count_all_lines(access1), before, "already cached: no request reached nginx");
	free(cache);
}

static void test_not_found(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("404");

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/nothere", "model.gguf", &r, &err), SKIPPER_ERR_NOT_FOUND,
	       "missing repository: not found");
	ok(strstr(err.msg, "org/nothere") && strstr(err.msg, "404"), "message names the repo and the 404: %s", err.msg);
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/model", "nope.gguf", &r, &err), SKIPPER_ERR_NOT_FOUND,
	       "missing file in a repository: not found");
	ok(strstr(err.msg, "nope.gguf") && strstr(err.msg, "org/model"), "message names file and repo: %s", err.msg);
	free(cache);
}

static void test_auth(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("auth");

	is_int(pull(endpoint, cache, NULL, 0, 2, "priv/model", "config.json", &r, &err), SKIPPER_ERR_AUTH,
	       "401 without a token");
	ok(strstr(err.msg, "401") && strstr(err.msg, "HF_TOKEN"), "message says how to authenticate: %s", err.msg);
	is_int(pull(endpoint, cache, "wrongtoken", 0, 2, "priv/model", "config.json", &r, &err), SKIPPER_ERR_AUTH,
	       "401 with a wrong token");
	ok(!strstr(err.msg, "wrongtoken"), "the token is not in the message");
	is_int(pull(endpoint, cache, "testtoken", 0, 2, "priv/model", "model.gguf", &r, &err), SKIPPER_OK,
	       "success with the token: %s", err.msg);
	is_int(h_count_lines(access1, "/priv/model/resolve/", "\" 200 ", (const char *)NULL), 1,
	       "nginx served the private file once");
	free(cache);
}

static void test_retry_500(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("500"), ep[64];
	int pport;
	pid_t proxy = h_faultproxy(proxy_exe, root, port1, "fail500", 1, &pport);

	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
	is_int(pull(ep, cache, NULL, 0, 0, "org/model", "config.json", &r, &err), SKIPPER_ERR_NETWORK,
	       "500 with retries = 0: network error");
	ok(strstr(err.msg, "500"), "message names the status: %s", err.msg);
	h_stop(proxy);
	proxy = h_faultproxy(proxy_exe, root, port1, "fail500", 1, &pport);
	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
	is_int(pull(ep, cache, NULL, 0, 2, "org/model", "config.json", &r, &err), SKIPPER_OK,
	       "500 then 200: the retry succeeds: %s", err.msg);
	ok(notes.n == 1 && strstr(notes.last, "HTTP 500") && strstr(notes.last, "; retrying in ") &&
	       strstr(notes.last, "(attempt 2 of 3)"),
	   "the retry is told, with why and when (%s)", notes.last);
	h_stop(proxy);
	free(cache);
}

/* A refused connection is the host's answer: no retry (it took 16 s of
 * silent retries to fail), and the message says why. */
static void test_refused(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("refused"), ep[64];
	struct timespec t0, t1;

	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", h_free_port());
	clock_gettime(CLOCK_MONOTONIC, &t0);
	is_int(pull(ep, cache, NULL, 0, 5, "org/model", "config.json", &r, &err), SKIPPER_ERR_NETWORK,
	       "nothing listening: a network error");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	ok(notes.n == 0 && s < 2 && strstr(err.msg, "not retried: nothing listens there"),
	   "a refused connection is not retried (%.2f s, %d notes): %s", s, notes.n, err.msg);
	free(cache);
}

static void test_resume(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("resume"), ep[64], *p, range[64];
	int pport, ranges_before = h_count_lines(access1, "range=\"bytes=", (const char *)NULL);
	struct stat st;
	pid_t proxy = h_faultproxy(proxy_exe, root, port1, "drop", 3 << 20, &pport);

	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
	is_int(pull(ep, cache, NULL, 0, 0, "org/model", "model.gguf", &r, &err), SKIPPER_ERR_NETWORK,
	       "connection dropped mid-file: network error");
	h_stop(proxy);
	p = h_fmt("%s/.locks/models--org--model/%s.incomplete", cache, model_sha);
	if (stat(p, &st) < 0)
		st.st_size = -1;
	ok(st.st_size > 0 && st.st_size < BIG_SIZE, "partial file kept outside blobs/ (%lld bytes)",
	   (long long)st.st_size);
	free(p);
	p = h_fmt("%s/models--org--model/blobs", cache);
	is_int(dir_entries(p), 0, "nothing in blobs/ after the drop");
	free(p);
	p = h_fmt("%s/models--org--model/snapshots/%s/model.gguf", cache, model_commit);
	ok(access(p, F_OK) != 0, "nothing in snapshots/ after the drop");
	free(p);
	is_int(pull(endpoint, cache, NULL, 0, 0, "org/model", "model.gguf", &r, &err), SKIPPER_OK,
	       "second run resumes: %s", err.msg);
	snprintf(range, sizeof range, "range=\"bytes=%lld-\"", (long long)st.st_size);
	is_int(h_count_lines(access1, "/org/model/resolve/", " 206 ", range, (const char *)NULL), 1,
	       "nginx saw the Range request %s", range);
	is_str(sha_of(r.path), model_sha, "resumed file has the right SHA-256");
	/* Same fault with retries allowed: one run recovers by itself. */
	free(cache);
	cache = cache_path("resume2");
	proxy = h_faultproxy(proxy_exe, root, port1, "drop", 5 << 20, &pport);
	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", pport);
	is_int(pull(ep, cache, NULL, 0, 3, "org/model", "model.gguf", &r, &err), SKIPPER_OK,
	       "drop with retries: one run resumes and finishes: %s", err.msg);
	is_str(sha_of(r.path), model_sha, "and the SHA-256 is right");
	ok(h_count_lines(access1, "range=\"bytes=", (const char *)NULL) == ranges_before + 2, "via a second Range request");
	h_stop(proxy);
	free(cache);
}

static void test_checksum(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("badsum"), *p;

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/badsum", "model.gguf", &r, &err), SKIPPER_ERR_CHECKSUM,
	       "wrong checksum is refused");
	ok(strstr(err.msg, "model.gguf") && strstr(err.msg, model_sha) && strstr(err.msg, "got "),
	   "message names file, expected and actual: %s", err.msg);
	p = h_fmt("%s/models--org--badsum/blobs", cache);
	is_int(dir_entries(p), 0, "nothing in blobs/");
	free(p);
	p = h_fmt("%s/models--org--badsum/snapshots", cache);
	is_int(dir_entries(p), 0, "nothing in snapshots/");
	free(p);
	p = h_fmt("%s/.locks/models--org--badsum/%s.incomplete", cache, model_sha);
	ok(access(p, F_OK) != 0, "no partial file left either");
	free(p);
	free(cache);
}

static void test_concurrent(void)
{
	char *cache = cache_path("concurrent");
	int before = h_count_lines(access1, "/org/model/resolve/", "model.gguf", (const char *)NULL), fds[2], status,
	    good = 0;
	pid_t kids[2];

	if (pipe(fds) < 0)
		h_bail("pipe");
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct skipper_error err;
			struct result r;
			char c;
			close(fds[1]);
			if (read(fds[0], &c, 1) < 0) /* start together */
				_exit(3);
			_exit(pull(endpoint, cache, NULL, 0, 2, "org/model", "model.gguf", &r, &err) == 0 &&
			              strcmp(sha_of(r.path), model_sha) == 0
			          ? 0
			          : 1);
		}
	}
	close(fds[0]);
	close(fds[1]); /* EOF releases both */
	for (int i = 0; i < 2; i++)
		good += waitpid(kids[i], &status, 0) == kids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	is_int(good, 2, "two concurrent pulls of one file both succeed");
	is_int(h_count_lines(access1, "/org/model/resolve/", "model.gguf", (const char *)NULL) - before, 1,
	       "and the file was downloaded once");
	free(cache);
}

static void test_offline(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("main"), *empty = cache_path("offline-empty");
	int before = h_count_all_lines(access1);

	is_int(pull(endpoint, cache, NULL, 1, 2, "org/model", "model.gguf", &r, &err), SKIPPER_OK,
	       "offline with the file cached: %s", err.msg);
	is_int(pull(endpoint, cache, NULL, 1, 2, "org/model", "config.json", &r, &err), SKIPPER_ERR_OFFLINE,
	       "offline, file of a cached repo missing");
	ok(strstr(err.msg, "config.json") && strstr(err.msg, "offline"), "message names what is missing: %s", err.msg);
	is_int(pull(endpoint, empty, NULL, 1, 2, "org/model", "model.gguf", &r, &err), SKIPPER_ERR_OFFLINE,
	       "offline with nothing cached");
	ok(strstr(err.msg, "org/model"), "message names the repo: %s", err.msg);
	is_int(pull(endpoint, cache, NULL, 1, 2, "org/model", NULL, &r, &err), SKIPPER_OK, "offline whole-repo pull");
	is_int(r.calls, 2, "lists the two cached files");
	is_int(h_count_all_lines(access1), before, "offline: no request made");
	free(cache);
	free(empty);
}

static void test_evil_listing(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("evil"), *p;

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/evil", NULL, &r, &err), SKIPPER_ERR_FORMAT,
	       "listing with ../ names refused");
	ok(strstr(err.msg, "unsafe file name") && strstr(err.msg, "../../../evil.txt"), "message shows the name: %s",
	   err.msg);
	is_int(r.calls, 0, "no file fetched from that listing");
	p = h_fmt("%s/evil.txt", root);
	ok(access(p, F_OK) != 0, "nothing written outside the cache");
	free(p);
	free(cache);
}

static void test_hf_layout(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("hf"), *p;
	const char *commit = "abcdef0123456789abcdef0123456789abcdef01";
	char sha[65];
	int before = h_count_all_lines(access1);

	/* What huggingface_hub leaves behind: blob, relative snapshot link, ref. */
	h_write_str(p = h_fmt("%s/models--Org--Handmade/blobs/tmpblob", cache), "weights from another tool\n");
	skipper_sha256_file(p, sha, &err);
	{
		char *q = h_fmt("%s/models--Org--Handmade/blobs/%s", cache, sha);
		rename(p, q);
		free(q);
	}
	free(p);
	h_mkdirs(p = h_fmt("%s/models--Org--Handmade/snapshots/%s", cache, commit)), free(p);
	p = h_fmt("%s/models--Org--Handmade/snapshots/%s/weights.bin", cache, commit);
	{
		char *target = h_fmt("../../blobs/%s", sha);
		ok(symlink(target, p) == 0, "made a huggingface_hub-style cache");
		free(target);
	}
	free(p);
	h_write_str(p = h_fmt("%s/models--Org--Handmade/refs/main", cache), commit), free(p);
	is_int(pull(endpoint, cache, NULL, 0, 2, "Org/Handmade", "weights.bin", &r, &err), SKIPPER_OK,
	       "file from another tool's cache is found: %s", err.msg);
	is_int(r.downloaded, 0, "and not downloaded");
	is_int(h_count_all_lines(access1), before, "no request made");
	free(cache);
}

static void test_oversize(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("liar"), *p;

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/liar", "config.json", &r, &err), SKIPPER_ERR_RANGE,
	       "a server sending more than the listed size is cut off");
	ok(strstr(err.msg, "config.json") && strstr(err.msg, "5 bytes"), "message: %s", err.msg);
	p = h_fmt("%s/models--org--liar/blobs", cache);
	is_int(dir_entries(p), 0, "nothing in blobs/");
	free(p);
	p = h_fmt("%s/.locks/models--org--liar", cache);
	{
		char *cmd = h_fmt("test -z \"$(find '%s' -name '*.incomplete' -size +0c)\"", p);
		ok(system(cmd) == 0, "and no bytes kept in a partial file");
		free(cmd);
	}
	free(p);
	free(cache);
}

static void test_git_blob_id(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("gitblob");

	is_int(pull(endpoint, cache, NULL, 0, 2, "org/gitblob", "good.json", &r, &err), SKIPPER_OK,
	       "file checked by its git blob id: %s", err.msg);
	{
		char target[256] = "";
		ssize_t n = readlink(r.path, target, sizeof target - 1);
		if (n > 0)
			target[n] = '\0';
		ok(n == 52 && strncmp(target, "../../blobs/", 12) == 0, "blob named by the git id like huggingface_hub: %s",
		   target);
	}
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/gitblob", "bad.json", &r, &err), SKIPPER_ERR_CHECKSUM,
	       "wrong git blob id refused");
	ok(strstr(err.msg, "bad.json") && strstr(err.msg, "git blob id"), "message: %s", err.msg);
	free(cache);
}

static void test_redirect(void)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("redir");

	is_int(pull(endpoint, cache, "testtoken", 0, 2, "org/redir", "model.gguf", &r, &err), SKIPPER_OK,
	       "redirect to another host followed: %s", err.msg);
	is_str(sha_of(r.path), model_sha, "redirected content verified");
	is_int(h_count_lines(access1, "/org/redir/resolve/", " 302 ", "auth=\"Bearer testtoken\"", (const char *)NULL), 1,
	       "the endpoint got the token");
	is_int(h_count_lines(access2, "/org/redir/resolve/", " 200 ", (const char *)NULL), 1,
	       "the other host served the file");
	is_int(h_count_lines(access2, "Bearer", (const char *)NULL), 0, "the other host never saw the token");
	free(cache);
}

static void test_profiles(const char *pub)
{
	struct skipper_error err;
	struct result r;
	char *cache = cache_path("profiles");
	const char *keys[1] = {pub};
	static const char *const names[] = {"signed.ini", "unsigned.ini", "tampered.ini"};
	char paths[3][4096];

	for (int i = 0; i < 3; i++) {
		is_int(pull(endpoint, cache, NULL, 0, 2, "org/profiles", names[i], &r, &err), SKIPPER_OK, "pull %s: %s",
		       names[i], err.msg);
		snprintf(paths[i], sizeof paths[i], "%s", r.path);
	}
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/profiles", "signed.ini.sig", &r, &err), SKIPPER_OK,
	       "pull signed.ini.sig");
	is_int(pull(endpoint, cache, NULL, 0, 2, "org/profiles", "tampered.ini.sig", &r, &err), SKIPPER_OK,
	       "pull tampered.ini.sig");
	for (int i = 0; i < 3; i++)
		is_int(skipper_sign_check_trusted(paths[i], keys, 0, &err), SKIPPER_OK,
		       "no trusted_keys: %s accepted", names[i]);
	is_int(skipper_sign_check_trusted(paths[0], keys, 1, &err), SKIPPER_OK, "trusted_keys: signed accepted: %s",
	       err.msg);
	is_int(skipper_sign_check_trusted(paths[1], keys, 1, &err), SKIPPER_ERR_SIGNATURE, "trusted_keys: unsigned refused");
	ok(strstr(err.msg, "unsigned") && strstr(err.msg, "refused"), "message: %s", err.msg);
	is_int(skipper_sign_check_trusted(paths[2], keys, 1, &err), SKIPPER_ERR_SIGNATURE, "trusted_keys: tampered refused");
	ok(strstr(err.msg, "does not verify"), "message: %s", err.msg);
	free(cache);
}

int main(void)
{
	const char *nginx = getenv("NGINX"), *builddir = getenv("top_builddir");
	char tmpl[] = "/tmp/skipper-hub-XXXXXX";
	char *key, *pub;
	pid_t ng;

	if (!nginx || !*nginx || access(nginx, X_OK) != 0)
		tap_skip_all("nginx not found (install nginx-light)");
	signal(SIGPIPE, SIG_IGN);
	root = mkdtemp(tmpl);
	if (!root)
		h_bail("mkdtemp");
	tree = h_fmt("%s/tree", root);
	tree2 = h_fmt("%s/tree2", root);
	access1 = h_fmt("%s/access1.log", root);
	access2 = h_fmt("%s/access2.log", root);
	proxy_exe = h_fmt("%s/tests/hub/faultproxy", builddir ? builddir : ".");
	key = h_fmt("%s/key.pem", root);
	pub = h_fmt("%s/pub.pem", root);
	make_trees();
	write_profiles(key, pub);
	ng = start_nginx_retry();

	test_normal_and_cached();
	test_not_found();
	test_auth();
	test_retry_500();
	test_refused();
	test_resume();
	test_checksum();
	test_concurrent();
	test_offline();
	test_evil_listing();
	test_hf_layout();
	test_oversize();
	test_git_blob_id();
	test_redirect();
	test_profiles(pub);

	h_stop(ng);
	free(key);
	free(pub);
	if (!tap_failed && !getenv("SKIPPER_KEEP_TMP")) {
		char *cmd = h_fmt("rm -rf '%s'", root);
		if (system(cmd) != 0)
			diag("could not remove %s", root);
		free(cmd);
	} else {
		diag("test files kept in %s", root);
	}
	return tap_done();
}
