/* skipper profile pull|show|verify|sign|keygen|publish: skip profiles as
 * hub data. Nothing fetched here is ever executed: pulls take profile data
 * names only, and with [hub] trusted_keys set every profile needs a valid
 * Ed25519 signature from one of those keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "cli.h"
#include "hub/hub.h"
#include "policy/profile.h"
#include "hub/publish.h"
#include "hub/sign.h"

#define MAX_KEYS 32

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: skipper profile pull [--revision REV] [--offline] REPO [FILE]...\n"
	        "       skipper profile show FILE|hub:ORG/REPO[@REV]/FILE\n"
	        "       skipper profile verify [--key PUB.pem]... FILE...\n"
	        "       skipper profile sign --key KEY.pem FILE...\n"
	        "       skipper profile keygen KEY.pem PUB.pem\n"
	        "       skipper profile publish DIR --repo ORG/NAME [--revision REV] [--out ROOT]\n"
	        "All take -c FILE and --set SECTION.KEY=VALUE. See skipper-hub(1), skipper-profile(5).\n");
}

struct args {
	struct cli_common c;
	const char **pos; /* positional arguments */
	int npos;
	const char *keys[MAX_KEYS];
	size_t nkeys;
	const char *revision, *repo, *out;
	int offline;
};

/* Common option loop for every subcommand; returns -1 on a usage error. */
static int parse_args(struct args *a, int argc, char **argv)
{
	a->pos = calloc((size_t)argc + 1, sizeof *a->pos);
	if (!a->pos)
		return -1;
	for (int i = 1; i < argc; i++) {
		int r = cli_common_option(&a->c, argc, argv, &i);
		if (r < 0)
			return -1;
		if (r)
			continue;
		if (strcmp(argv[i], "--key") == 0 && i + 1 < argc && a->nkeys < MAX_KEYS)
			a->keys[a->nkeys++] = argv[++i];
		else if ((strcmp(argv[i], "--revision") == 0 || strcmp(argv[i], "-r") == 0) && i + 1 < argc)
			a->revision = argv[++i];
		else if (strcmp(argv[i], "--repo") == 0 && i + 1 < argc)
			a->repo = argv[++i];
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			a->out = argv[++i];
		else if (strcmp(argv[i], "--offline") == 0)
			a->offline = 1;
		else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "skipper profile: %s option '%s'\n", i + 1 == argc ? "unknown or incomplete" : "unknown",
			        argv[i]);
			return -1;
		} else
			a->pos[a->npos++] = argv[i];
	}
	return 0;
}

static void print_layers(const char *label, const char *list, int n_layers)
{
	uint8_t mask[SKIPPER_LAYERS_MAX];
	int count = 0;
	if (n_layers > 0 && n_layers <= SKIPPER_LAYERS_MAX && skipper_layers_parse(list, mask, n_layers, NULL) == 0) {
		for (int i = 0; i < n_layers; i++)
			count += mask[i];
		printf("  %-6s %s  (%d of %d layers skipped)\n", label, *list ? list : "-", count, n_layers);
	} else {
		printf("  %-6s %s\n", label, *list ? list : "-");
	}
}

static int show(const struct skipper_config *cfg, const char *what)
{
	struct skipper_profile *prof = NULL;
	struct skipper_error err = {0};
	const char *keys[MAX_KEYS], *sect = "", *section, *key, *value;
	char *path = NULL, *kbuf = NULL, *sigpath = NULL;
	size_t nkeys = session_trusted_keys(cfg, &kbuf, keys, MAX_KEYS);
	int n_layers, rc;

	if (strncmp(what, "hub:", 4) == 0) {
		if ((rc = session_hub_profile(cfg, what, &cli_hooks, &path, &err))) {
			fprintf(stderr, "skipper: %s\n", err.msg);
			rc = cli_hub_exit_code(rc);
			goto out;
		}
	} else if (!(path = strdup(what))) {
		rc = EXIT_FAILURE_GENERIC;
		goto out;
	}
	if (skipper_profile_read(path, &prof, &err)) {
		fprintf(stderr, "skipper profile show: %s\n", err.msg);
		rc = EXIT_FAILURE_GENERIC;
		goto out;
	}
	n_layers = skipper_profile_n_layers(prof);
	printf("%s\n", what);
	for (int i = 0; skipper_profile_entry(prof, i, &section, &key, &value) == 0; i++) {
		if (strcmp(section, sect) != 0) {
			sect = section;
			printf("[%s]\n", sect);
		}
		if ((strcmp(sect, "mask") == 0 || strncmp(sect, "domain.", 7) == 0) &&
		    (strcmp(key, "attn") == 0 || strcmp(key, "mlp") == 0))
			print_layers(key, value, n_layers);
		else
			printf("  %-14s %s\n", key, value);
	}
	if (asprintf(&sigpath, "%s.sig", path) < 0)
		sigpath = NULL;
	if (nkeys == 0)
		printf("signature: %s\n", sigpath && access(sigpath, R_OK) == 0
		                              ? "present, not checked ([hub] trusted_keys is empty)"
		                              : "none");
	else if (skipper_sign_verify(path, NULL, keys, nkeys, NULL, &err) == SKIPPER_OK)
		printf("signature: good (trusted key)\n");
	else
		printf("signature: BAD: %s\n", err.msg);
	rc = EXIT_OK;
out:
	skipper_profile_free(prof);
	free(path);
	free(kbuf);
	free(sigpath);
	return rc;
}

static int verify(const struct skipper_config *cfg, struct args *a)
{
	struct skipper_error err = {0};
	const char *keys[MAX_KEYS];
	char *kbuf = NULL;
	size_t nkeys = a->nkeys, which;
	int rc = EXIT_OK;

	if (nkeys)
		memcpy(keys, a->keys, nkeys * sizeof *keys);
	else
		nkeys = session_trusted_keys(cfg, &kbuf, keys, MAX_KEYS);
	if (nkeys == 0) {
		fprintf(stderr, "skipper profile verify: no key: give --key PUB.pem or set [hub] trusted_keys\n");
		free(kbuf);
		return EXIT_USAGE;
	}
	for (int i = 0; i < a->npos; i++) {
		if (skipper_sign_verify(a->pos[i], NULL, keys, nkeys, &which, &err) == SKIPPER_OK) {
			printf("%s: good signature (%s)\n", a->pos[i], keys[which]);
		} else {
			fprintf(stderr, "skipper profile verify: %s\n", err.msg);
			rc = err.status == SKIPPER_ERR_CONFIG ? EXIT_USAGE : EXIT_NETWORK;
		}
	}
	free(kbuf);
	return rc;
}

static int sign(struct args *a)
{
	struct skipper_error err = {0};

	if (a->nkeys != 1) {
		fprintf(stderr, "skipper profile sign: give exactly one --key KEY.pem (a private Ed25519 key)\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < a->npos; i++) {
		if (skipper_sign_file(a->keys[0], a->pos[i], NULL, &err)) {
			fprintf(stderr, "skipper profile sign: %s\n", err.msg);
			return err.status == SKIPPER_ERR_CONFIG ? EXIT_USAGE : EXIT_FAILURE_GENERIC;
		}
		printf("%s.sig\n", a->pos[i]);
	}
	return EXIT_OK;
}

struct pulled {
	char **paths;
	size_t n, cap;
	int nomem;
};

static void collect(void *arg, const char *file, const char *path, int downloaded)
{
	struct pulled *p = arg;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		char **np = realloc(p->paths, cap * sizeof *np);
		if (!np) {
			p->nomem = 1;
			return;
		}
		p->paths = np;
		p->cap = cap;
	}
	if (!(p->paths[p->n] = strdup(path)))
		p->nomem = 1;
	else
		p->n++;
}

/* Files the engine loads as a profile: these are the ones that must be signed. */
static int needs_signature(const char *path)
{
	size_t n = strlen(path);
	return (n > 4 && strcmp(path + n - 4, ".ini") == 0) || (n > 12 && strcmp(path + n - 12, ".safetensors") == 0);
}

/* Pull profile data; with trusted keys every profile file must verify, and
 * only then are the paths printed, so a refused set never reaches stdout. */
static int pull(const struct skipper_config *cfg, struct args *a)
{
	struct skipper_hub_request req = {.repo = a->pos[0], .revision = a->revision,
	                                  .filter = skipper_hub_profile_name_ok};
	struct skipper_error err = {0};
	struct pulled got = {0};
	const char *keys[MAX_KEYS];
	char *kbuf = NULL;
	size_t nkeys = session_trusted_keys(cfg, &kbuf, keys, MAX_KEYS);
	struct session_hub h;
	int rc = EXIT_OK, st = SKIPPER_OK;

	if (skipper_sign_check_keys(keys, nkeys, &err)) {
		fprintf(stderr, "skipper profile pull: [hub] trusted_keys: %s\n", err.msg);
		free(kbuf);
		return EXIT_USAGE;
	}
	for (int i = 1; i < a->npos; i++)
		if (!skipper_hub_profile_name_ok(a->pos[i])) {
			fprintf(stderr,
			        "skipper profile pull: refusing %s: only profile data (.ini, .sig, .safetensors, .json, .txt, .md) is fetched\n",
			        a->pos[i]);
			free(kbuf);
			return EXIT_USAGE;
		}
	if ((rc = session_hub_open(&h, cfg, a->offline, &cli_hooks, &err))) {
		free(kbuf);
		return cli_fail(&err, rc);
	}
	cli_install_signals();
	if (a->npos == 1)
		st = skipper_hub_pull(h.hub, &req, collect, &got, &err);
	for (int i = 1; i < a->npos && st == SKIPPER_OK; i++) {
		req.files = &a->pos[i];
		req.n_files = 1;
		st = skipper_hub_pull(h.hub, &req, collect, &got, &err);
		if (st == SKIPPER_OK && nkeys && needs_signature(a->pos[i])) {
			char *sig = NULL;
			const char *sf;
			if (asprintf(&sig, "%s.sig", a->pos[i]) < 0)
				break;
			sf = sig;
			req.files = &sf;
			st = skipper_hub_pull(h.hub, &req, collect, &got, &err);
			if (st == SKIPPER_ERR_NOT_FOUND)
				st = SKIPPER_OK; /* unsigned: the trust check below says so */
			free(sig);
		}
	}
	if (st) {
		fprintf(stderr, "skipper profile pull: %s\n", err.msg);
		rc = cli_hub_exit_code(st);
		goto out;
	}
	if (got.nomem) {
		rc = EXIT_FAILURE_GENERIC;
		goto out;
	}
	if (!got.n) { /* as skipper pull says when a pattern matches nothing */
		fprintf(stderr, "skipper profile pull: %s holds no profile data (.ini, .sig, .safetensors, .json, .txt, .md)\n",
		        a->pos[0]);
		rc = EXIT_NETWORK;
		goto out;
	}
	for (size_t i = 0; i < got.n; i++)
		if (needs_signature(got.paths[i]) && skipper_sign_check_trusted(got.paths[i], keys, nkeys, &err)) {
			fprintf(stderr, "skipper profile pull: %s\n", err.msg);
			rc = EXIT_NETWORK;
		}
	for (size_t i = 0; i < got.n && rc == EXIT_OK; i++)
		printf("%s\n", got.paths[i]);
out:
	for (size_t i = 0; i < got.n; i++)
		free(got.paths[i]);
	free(got.paths);
	session_hub_close(&h);
	free(kbuf);
	return rc;
}

static int publish(struct args *a)
{
	struct skipper_error err = {0};
	const char *out = a->out ? a->out : ".";
	char commit[41];

	if (a->npos != 1 || !a->repo) {
		fprintf(stderr, "skipper profile publish: give DIR and --repo ORG/NAME\n");
		return EXIT_USAGE;
	}
	if (skipper_hub_publish(a->pos[0], out, a->repo, a->revision ? a->revision : "main", 1, commit, &err)) {
		fprintf(stderr, "skipper profile publish: %s\n", err.msg);
		return err.status == SKIPPER_ERR_ARG ? EXIT_USAGE : EXIT_FAILURE_GENERIC;
	}
	printf("published %s@%s (commit %s) under %s\n", a->repo, a->revision ? a->revision : "main", commit, out);
	return EXIT_OK;
}

int cmd_profile(int argc, char **argv)
{
	struct args a = {0};
	struct skipper_config *cfg = NULL;
	struct skipper_error err = {0};
	const char *sub = argc > 1 ? argv[1] : "";
	int rc;

	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc < 2 || parse_args(&a, argc - 1, argv + 1) < 0)
		goto usage;
	if ((rc = cli_load_config(&a.c, &cfg)))
		goto out;
	if (strcmp(sub, "pull") == 0 && a.npos >= 1) {
		rc = pull(cfg, &a);
	} else if (strcmp(sub, "show") == 0 && a.npos == 1) {
		rc = show(cfg, a.pos[0]);
	} else if (strcmp(sub, "verify") == 0 && a.npos >= 1) {
		rc = verify(cfg, &a);
	} else if (strcmp(sub, "sign") == 0 && a.npos >= 1) {
		rc = sign(&a);
	} else if (strcmp(sub, "keygen") == 0 && a.npos == 2) {
		rc = skipper_sign_keygen(a.pos[0], a.pos[1], &err) ? EXIT_FAILURE_GENERIC : EXIT_OK;
		if (rc)
			fprintf(stderr, "skipper profile keygen: %s\n", err.msg);
	} else if (strcmp(sub, "publish") == 0) {
		rc = publish(&a);
	} else {
		goto usage;
	}
	goto out;
usage:
	usage(stderr);
	rc = EXIT_USAGE;
out:
	skipper_config_free(cfg);
	cli_common_free(&a.c);
	free(a.pos);
	return rc;
}
