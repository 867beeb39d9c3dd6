/* Policy host: plugin search and loading with the ABI rules of DESIGN §5,
 * listing, instances with their INI section pushed key by key, the generic
 * host services and the checked hook wrappers the engine calls. */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "config.h"
#include "error.h"
#include "policy_host.h"
#include "sample.h"
#include "profile.h"

#ifndef SKIPPER_PLUGINDIR
#define SKIPPER_PLUGINDIR "/usr/local/lib/skipper/plugins"
#endif

#define PLUGIN_PREFIX "skipper-policy-"
#define PLUGIN_SUFFIX ".so"

struct skipper_policy_lib {
	void *handle; /* NULL for built-ins */
	char *path;
	struct skipper_policy desc;
};

struct skipper_policy_instance {
	struct skipper_policy_lib *lib;
	const struct skipper_policy_env *env;
	struct skipper_host host; /* per instance: it carries the model facts */
	void *state;
	int created;
	struct skipper_needs needs;
	double seconds;
	char msg[SKIPPER_ERROR_MAX];
	int msg_set;
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int valid_policy_name(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	return 1;
}

/* ================================================================ loading */

/* The part of the descriptor every ABI 1 plugin must have. */
#define DESC_MIN_SIZE (offsetof(struct skipper_policy, destroy) + sizeof(void (*)(void *)))

static int check_desc(struct skipper_policy_lib *lib, const struct skipper_policy *d, struct skipper_error *err)
{
	const char *path = lib->path;
	size_t n;

	if (d->abi_major != SKIPPER_POLICY_ABI_MAJOR)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                    "%s: refused: plugin ABI major version %u, this skipper speaks %d "
		                    "(rebuild the plugin against this skipper's policy.h)",
		                    path, d->abi_major, SKIPPER_POLICY_ABI_MAJOR);
	if (d->abi_minor > SKIPPER_POLICY_ABI_MINOR)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                    "%s: refused: plugin built for ABI %u.%u, newer than this skipper's %d.%d "
		                    "(upgrade skipper or rebuild the plugin)",
		                    path, d->abi_major, d->abi_minor, SKIPPER_POLICY_ABI_MAJOR, SKIPPER_POLICY_ABI_MINOR);
	if (d->struct_size < DESC_MIN_SIZE)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                    "%s: refused: descriptor struct_size %u is smaller than the %zu bytes every "
		                    "ABI %d plugin has",
		                    path, d->struct_size, (size_t)DESC_MIN_SIZE, SKIPPER_POLICY_ABI_MAJOR);
	/* Older plugins have a shorter descriptor: what they lack reads as NULL. */
	n = d->struct_size < sizeof lib->desc ? d->struct_size : sizeof lib->desc;
	memset(&lib->desc, 0, sizeof lib->desc);
	memcpy(&lib->desc, d, n);
	lib->desc.struct_size = sizeof lib->desc;
	if (!lib->desc.name || !lib->desc.name[0])
		return skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: descriptor has no name", path);
	if (!valid_policy_name(lib->desc.name))
		return skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                    "%s: refused: policy name '%s' may only use letters, digits, '_' and '-'", path,
		                    lib->desc.name);
	if (!lib->desc.create)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: policy '%s' has no create function", path,
		                    lib->desc.name);
	if (!lib->desc.destroy)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: policy '%s' has no destroy function", path,
		                    lib->desc.name);
	if (!lib->desc.version)
		lib->desc.version = "";
	if (!lib->desc.description)
		lib->desc.description = "";
	if (!lib->desc.config_help)
		lib->desc.config_help = "";
	return SKIPPER_OK;
}

void skipper_policy_unload(struct skipper_policy_lib *lib)
{
	if (!lib)
		return;
	if (lib->handle)
		dlclose(lib->handle);
	free(lib->path);
	free(lib);
}

static struct skipper_policy_lib *lib_new(const char *path, struct skipper_error *err)
{
	struct skipper_policy_lib *lib = calloc(1, sizeof *lib);
	if (!lib || !(lib->path = strdup(path))) {
		free(lib);
		skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		return NULL;
	}
	return lib;
}

int skipper_policy_load_file(const char *path, struct skipper_policy_lib **out, struct skipper_error *err)
{
	struct skipper_policy_lib *lib;
	skipper_policy_init_fn init;
	const struct skipper_policy *d;
	const char *why;
	void *sym;
	int rc;

	*out = NULL;
	if (access(path, F_OK) != 0)
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: policy plugin not found", path);
	if (!(lib = lib_new(path, err)))
		return SKIPPER_ERR_NOMEM;
	dlerror();
	lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib->handle) {
		why = dlerror();
		rc = skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: cannot load policy plugin: %s", path,
		                  why ? why : "unknown dlopen error");
		goto fail;
	}
	dlerror();
	sym = dlsym(lib->handle, "skipper_policy_init");
	if (!sym) {
		rc = skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                  "%s: not a skipper policy plugin: no exported skipper_policy_init "
		                  "(use SKIPPER_POLICY_REGISTER)",
		                  path);
		goto fail;
	}
	/* POSIX guarantees object/function pointer conversion for dlsym. */
	memcpy(&init, &sym, sizeof init);
	d = init();
	if (!d) {
		rc = skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: skipper_policy_init returned NULL", path);
		goto fail;
	}
	if ((rc = check_desc(lib, d, err)))
		goto fail;
	*out = lib;
	return SKIPPER_OK;
fail:
	skipper_policy_unload(lib);
	return rc;
}

int skipper_policy_load_builtin(const struct skipper_policy *desc, struct skipper_policy_lib **out,
                                struct skipper_error *err)
{
	struct skipper_policy_lib *lib;
	int rc;

	*out = NULL;
	if (!(lib = lib_new("<built-in>", err)))
		return SKIPPER_ERR_NOMEM;
	if ((rc = check_desc(lib, desc, err))) {
		skipper_policy_unload(lib);
		return rc;
	}
	*out = lib;
	return SKIPPER_OK;
}

const struct skipper_policy *skipper_policy_lib_desc(const struct skipper_policy_lib *lib)
{
	return &lib->desc;
}

const char *skipper_policy_lib_path(const struct skipper_policy_lib *lib)
{
	return lib->path;
}

/* ----------------------------------------------------------- search path */

struct dirlist {
	char **d;
	size_t n;
	char *buf; /* copy of $SKIPPER_PLUGIN_PATH the entries point into */
};

static void dirs_free(struct dirlist *dl)
{
	free(dl->d);
	free(dl->buf);
}

/* Directories in search order; empty entries dropped. */
static int dirs_get(const struct skipper_policy_search *s, struct dirlist *dl)
{
	const char *envp = getenv("SKIPPER_PLUGIN_PATH");
	size_t cap = 2;

	memset(dl, 0, sizeof *dl);
	if (envp && *envp) {
		if (!(dl->buf = strdup(envp)))
			return SKIPPER_ERR_NOMEM;
		for (const char *c = envp; *c; c++)
			cap += *c == ':';
		cap++;
	}
	if (!(dl->d = calloc(cap, sizeof *dl->d))) {
		free(dl->buf);
		return SKIPPER_ERR_NOMEM;
	}
	if (s && s->plugin_dir && *s->plugin_dir)
		dl->d[dl->n++] = (char *)s->plugin_dir;
	if (dl->buf) {
		char *save = NULL;
		for (char *tok = strtok_r(dl->buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
			dl->d[dl->n++] = tok;
	}
	dl->d[dl->n++] = (char *)SKIPPER_PLUGINDIR;
	return SKIPPER_OK;
}

static char *plugin_file(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + sizeof PLUGIN_PREFIX + sizeof PLUGIN_SUFFIX + 2;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s/%s%s%s", dir, PLUGIN_PREFIX, name, PLUGIN_SUFFIX);
	return p;
}

static const struct skipper_policy *find_builtin(const char *name, const struct skipper_policy_search *s)
{
	if (!s || !s->builtins)
		return NULL;
	for (const struct skipper_policy *const *b = s->builtins; *b; b++)
		if ((*b)->name && strcmp((*b)->name, name) == 0)
			return *b;
	return NULL;
}

int skipper_policy_load(const char *name, const struct skipper_policy_search *search,
                        struct skipper_policy_lib **out, struct skipper_error *err)
{
	const struct skipper_policy *b;
	struct dirlist dl;
	char tried[SKIPPER_ERROR_MAX / 2] = "";
	size_t used = 0;
	int rc;

	*out = NULL;
	if (strchr(name, '/'))
		return skipper_policy_load_file(name, out, err);
	if (!valid_policy_name(name))
		return skipper_fail(err, SKIPPER_ERR_CONFIG,
		                    "policy name '%s': only letters, digits, '_' and '-' (or a path to a .so)", name);
	if ((b = find_builtin(name, search)))
		return skipper_policy_load_builtin(b, out, err);
	if (dirs_get(search, &dl))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < dl.n; i++) {
		char *file = plugin_file(dl.d[i], name);
		if (!file) {
			dirs_free(&dl);
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		}
		if (access(file, F_OK) == 0) {
			/* The first file found is the policy: a broken one is an error,
			 * never silently replaced by one further down the path. */
			rc = skipper_policy_load_file(file, out, err);
			if (rc == SKIPPER_OK && strcmp((*out)->desc.name, name) != 0) {
				rc = skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: the plugin calls itself '%s', not '%s'",
				                  file, (*out)->desc.name, name);
				skipper_policy_unload(*out);
				*out = NULL;
			}
			free(file);
			dirs_free(&dl);
			return rc;
		}
		free(file);
		if (used < sizeof tried) {
			int k = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", dl.d[i]);
			used += k > 0 ? (size_t)k : 0;
		}
	}
	dirs_free(&dl);
	return skipper_fail(err, SKIPPER_ERR_NOT_FOUND,
	                    "policy '%s' not found: no %s%s%s in %s (set [policy] plugin_dir or SKIPPER_PLUGIN_PATH)",
	                    name, PLUGIN_PREFIX, name, PLUGIN_SUFFIX, tried);
}

int skipper_policy_exists(const char *name, const struct skipper_policy_search *search)
{
	struct dirlist dl;
	int found = 0;

	if (!valid_policy_name(name))
		return 0;
	if (find_builtin(name, search))
		return 1;
	if (dirs_get(search, &dl))
		return 0;
	for (size_t i = 0; i < dl.n && !found; i++) {
		char *file = plugin_file(dl.d[i], name);
		found = file && access(file, F_OK) == 0;
		free(file);
	}
	dirs_free(&dl);
	return found;
}

int skipper_policy_exists_cb(const char *name, void *arg)
{
	return skipper_policy_exists(name, arg);
}

/* ================================================================ listing */

void skipper_policy_list_free(struct skipper_policy_info *list, size_t n)
{
	if (!list)
		return;
	for (size_t i = 0; i < n; i++) {
		free(list[i].name);
		free(list[i].version);
		free(list[i].description);
		free(list[i].config_help);
		free(list[i].path);
		free(list[i].error);
	}
	free(list);
}

/* Descriptor strings may be NULL in a built-in; list them as "". */
static char *dup_text(const char *s)
{
	return strdup(s ? s : "");
}

struct list_acc {
	struct skipper_policy_info *v;
	size_t n, cap;
};

static int list_has(const struct list_acc *a, const char *name)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].name && strcmp(a->v[i].name, name) == 0)
			return 1;
	return 0;
}

static int list_add(struct list_acc *a, const char *name, const char *path, const struct skipper_policy *d,
                    const char *error)
{
	struct skipper_policy_info *e;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 8;
		struct skipper_policy_info *nv = realloc(a->v, cap * sizeof *nv);
		if (!nv)
			return SKIPPER_ERR_NOMEM;
		a->v = nv;
		a->cap = cap;
	}
	e = &a->v[a->n];
	memset(e, 0, sizeof *e);
	a->n++;
	e->name = strdup(name);
	e->path = strdup(path);
	if (!e->name || !e->path)
		return SKIPPER_ERR_NOMEM;
	if (error)
		return (e->error = strdup(error)) ? SKIPPER_OK : SKIPPER_ERR_NOMEM;
	e->version = dup_text(d->version);
	e->description = dup_text(d->description);
	e->config_help = dup_text(d->config_help);
	if (!e->version || !e->description || !e->config_help)
		return SKIPPER_ERR_NOMEM;
	return SKIPPER_OK;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct skipper_policy_info *)a)->name, ((const struct skipper_policy_info *)b)->name);
}

/* Names of skipper-policy-NAME.so files of one directory, sorted so the
 * listing does not depend on readdir order. */
static int scan_dir(const char *dir, char ***names, size_t *n)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (!dp)
		return SKIPPER_OK; /* a missing directory is simply empty */
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name), pl = strlen(PLUGIN_PREFIX), sl = strlen(PLUGIN_SUFFIX);
		char *nm;
		if (len <= pl + sl || strncmp(de->d_name, PLUGIN_PREFIX, pl) != 0 ||
		    strcmp(de->d_name + len - sl, PLUGIN_SUFFIX) != 0)
			continue;
		if (*n == cap) {
			char **nn = realloc(*names, (cap = cap ? 2 * cap : 8) * sizeof *nn);
			if (!nn)
				goto nomem;
			*names = nn;
		}
		if (!(nm = strndup(de->d_name + pl, len - pl - sl)))
			goto nomem;
		(*names)[(*n)++] = nm;
	}
	closedir(dp);
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && strcmp((*names)[j - 1], (*names)[j]) > 0; j--) {
			char *t = (*names)[j];
			(*names)[j] = (*names)[j - 1];
			(*names)[j - 1] = t;
		}
	return SKIPPER_OK;
nomem:
	closedir(dp);
	for (size_t i = 0; i < *n; i++)
		free((*names)[i]);
	free(*names);
	*names = NULL;
	*n = 0;
	return SKIPPER_ERR_NOMEM;
}

int skipper_policy_list(const struct skipper_policy_search *search, struct skipper_policy_info **out, size_t *n,
                        struct skipper_error *err)
{
	struct list_acc a = { 0 };
	struct dirlist dl;
	size_t n_builtin;
	int rc = SKIPPER_OK;

	*out = NULL;
	*n = 0;
	if (search && search->builtins)
		for (const struct skipper_policy *const *b = search->builtins; *b && !rc; b++)
			if ((*b)->name && !list_has(&a, (*b)->name))
				rc = list_add(&a, (*b)->name, "<built-in>", *b, NULL);
	n_builtin = a.n;
	if (rc || dirs_get(search, &dl)) {
		skipper_policy_list_free(a.v, a.n);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < dl.n && !rc; i++) {
		char **names;
		size_t nn;
		if ((rc = scan_dir(dl.d[i], &names, &nn)))
			break;
		for (size_t j = 0; j < nn; j++) {
			if (!rc && !list_has(&a, names[j])) {
				struct skipper_policy_lib *lib;
				struct skipper_error e = { 0 };
				char *file = plugin_file(dl.d[i], names[j]);
				if (!file) {
					rc = SKIPPER_ERR_NOMEM;
				} else if (skipper_policy_load_file(file, &lib, &e) == SKIPPER_OK) {
					if (strcmp(lib->desc.name, names[j]) != 0) {
						snprintf(e.msg, sizeof e.msg, "%s: refused: the plugin calls itself '%s'", file,
						         lib->desc.name);
						rc = list_add(&a, names[j], file, NULL, e.msg);
					} else {
						rc = list_add(&a, names[j], file, &lib->desc, NULL);
					}
					skipper_policy_unload(lib);
				} else {
					rc = list_add(&a, names[j], file, NULL, e.msg);
				}
				free(file);
			}
			free(names[j]);
		}
		free(names);
	}
	dirs_free(&dl);
	if (rc) {
		skipper_policy_list_free(a.v, a.n);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	if (a.n > n_builtin)
		qsort(a.v + n_builtin, a.n - n_builtin, sizeof *a.v, by_name);
	*out = a.v;
	*n = a.n;
	return SKIPPER_OK;
}

/* ========================================================= host services */

#define INST(ctx) ((struct skipper_policy_instance *)(ctx))

static void svc_set_error(void *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(INST(ctx)->msg, sizeof INST(ctx)->msg, fmt, ap);
	va_end(ap);
	INST(ctx)->msg_set = 1;
}

static void svc_log(void *ctx, int level, const char *fmt, ...)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	char buf[SKIPPER_ERROR_MAX];
	va_list ap;

	if (!env->log || level > env->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	env->log(env->engine, level, INST(ctx)->lib->desc.name, buf);
}

static const char *svc_model_sha256(void *ctx)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	return env->model_sha256 ? env->model_sha256(env->engine) : NULL;
}

static int svc_parse_bool(void *ctx, const char *value, int *out)
{
	if (value && skipper_parse_bool(value, out) == SKIPPER_OK)
		return SKIPPER_POLICY_OK;
	svc_set_error(ctx, "expected a boolean (yes/no, true/false, on/off, 1/0), got '%s'", value ? value : "");
	return SKIPPER_POLICY_ERROR;
}

static int svc_parse_int(void *ctx, const char *value, int64_t min, int64_t max, int64_t *out)
{
	long v;
	if (!value || skipper_parse_long(value, &v) != SKIPPER_OK || v < min || v > max) {
		if (min == INT64_MIN && max == INT64_MAX)
			svc_set_error(ctx, "expected an integer, got '%s'", value ? value : "");
		else
			svc_set_error(ctx, "expected an integer in [%lld, %lld], got '%s'", (long long)min,
			              (long long)max, value ? value : "");
		return SKIPPER_POLICY_ERROR;
	}
	*out = v;
	return SKIPPER_POLICY_OK;
}

static int svc_parse_double(void *ctx, const char *value, double min, double max, double *out)
{
	double v;
	if (!value || skipper_parse_double(value, &v) != SKIPPER_OK || !(v >= min && v <= max)) {
		svc_set_error(ctx, "expected a number in [%g, %g], got '%s'", min, max, value ? value : "");
		return SKIPPER_POLICY_ERROR;
	}
	*out = v;
	return SKIPPER_POLICY_OK;
}

static int svc_parse_layers(void *ctx, const char *value, uint8_t *mask, int n_layer)
{
	struct skipper_error e = { 0 };
	if (skipper_layers_parse(value, mask, n_layer, &e) != SKIPPER_OK) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_format_layers(void *ctx, const uint8_t *mask, int n_layer, char *buf, size_t size)
{
	return skipper_layers_format(mask, n_layer, buf, size);
}

static void svc_rng_seed(void *ctx, struct skipper_rng *rng, uint64_t stream)
{
	/* Seed from the run seed, the policy name and the stream so that two
	 * policies or two streams never share a sequence. */
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (const char *c = INST(ctx)->lib->desc.name; *c; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
	skipper_rng_seed(rng, INST(ctx)->env->seed ^ h ^ (stream * UINT64_C(0xd1342543de82ef95)));
}

static uint64_t svc_rng_u64(void *ctx, struct skipper_rng *rng)
{
	return skipper_rng_u64(rng);
}

static double svc_rng_double(void *ctx, struct skipper_rng *rng)
{
	return skipper_rng_double(rng);
}

static double svc_now(void *ctx)
{
	return mono_now();
}

static const char *svc_profile_path(void *ctx)
{
	const char *p = INST(ctx)->env->profile_path;
	return p && *p ? p : NULL;
}

static int svc_profile_read(void *ctx, const char *path, struct skipper_profile **out)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	struct skipper_error e = { 0 };
	struct skipper_profile *p;

	*out = NULL;
	if (skipper_profile_read(path, &p, &e))
		goto fail;
	if (env->n_layer > 0) {
		const char *sha = svc_model_sha256(ctx);
		if (skipper_profile_validate(p, sha, env->n_layer, &e)) {
			skipper_profile_free(p);
			goto fail;
		}
	}
	*out = p;
	return SKIPPER_POLICY_OK;
fail:
	svc_set_error(ctx, "%s", e.msg);
	return SKIPPER_POLICY_ERROR;
}

/* Model names come from file metadata: keep them on one INI-safe line. */
static void ini_safe(char *dst, size_t size, const char *src)
{
	size_t n = 0;
	for (; *src && n + 1 < size; src++)
		dst[n++] = strchr(";#\r\n", *src) ? '_' : *src;
	while (n && isspace((unsigned char)dst[n - 1]))
		n--;
	dst[n] = '\0';
	while (isspace((unsigned char)dst[0]))
		memmove(dst, dst + 1, n--);
	if (!dst[0])
		snprintf(dst, size, "unknown");
}

static int svc_profile_new(void *ctx, const char *method, struct skipper_profile **out)
{
	struct skipper_policy_instance *inst = INST(ctx);
	const struct skipper_policy_env *env = inst->env;
	struct skipper_error e = { 0 };
	struct skipper_profile *p;
	char num[32], by[256], name[256];
	const char *sha;
	int rc;

	*out = NULL;
	if (env->n_layer <= 0) {
		svc_set_error(ctx, "profile_new: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	if (!(sha = svc_model_sha256(ctx))) {
		svc_set_error(ctx, "profile_new: cannot compute the model's SHA-256");
		return SKIPPER_POLICY_ERROR;
	}
	snprintf(num, sizeof num, "%d", env->n_layer);
	snprintf(by, sizeof by, "skipper %s, policy %s %s", PACKAGE_VERSION, inst->lib->desc.name,
	         inst->lib->desc.version);
	ini_safe(by, sizeof by, by);
	ini_safe(name, sizeof name, env->model_name ? env->model_name : "");
	if ((rc = skipper_profile_new(&p, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "model", name, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "model_sha256", sha, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "method", method ? method : inst->lib->desc.name, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "n_layers", num, &e)) == SKIPPER_OK)
		rc = skipper_profile_set(p, "profile", "created_by", by, &e);
	if (rc) {
		skipper_profile_free(p);
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	*out = p;
	return SKIPPER_POLICY_OK;
}

static const char *svc_profile_get(void *ctx, const struct skipper_profile *p, const char *section,
                                   const char *key)
{
	return skipper_profile_get(p, section, key);
}

static int svc_profile_get_mask(void *ctx, const struct skipper_profile *p, const char *section,
                                const char *key, uint8_t *mask)
{
	struct skipper_error e = { 0 };
	int rc;

	if (INST(ctx)->env->n_layer <= 0) {
		/* the plugin sized mask by host->n_layer: without a model there is no size */
		svc_set_error(ctx, "profile_get_mask: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	rc = skipper_profile_get_mask(p, section, key, mask, INST(ctx)->env->n_layer, &e);
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static const char *svc_profile_section(void *ctx, const struct skipper_profile *p, int i)
{
	return skipper_profile_section(p, i);
}

static int svc_profile_set(void *ctx, struct skipper_profile *p, const char *section, const char *key,
                           const char *value)
{
	struct skipper_error e = { 0 };
	if (skipper_profile_set(p, section, key, value, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_profile_set_mask(void *ctx, struct skipper_profile *p, const char *section, const char *key,
                                const uint8_t *mask)
{
	struct skipper_error e = { 0 };
	int n = INST(ctx)->env->n_layer, pn = skipper_profile_n_layers(p);

	/* mask has host->n_layer entries: read no more, and keep the profile consistent */
	if (n <= 0) {
		svc_set_error(ctx, "profile_set_mask: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	if (pn > 0 && pn != n) {
		svc_set_error(ctx, "profile_set_mask: profile is for %d layers, the model has %d", pn, n);
		return SKIPPER_POLICY_ERROR;
	}
	if (skipper_profile_set_mask(p, section, key, mask, n, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_profile_write(void *ctx, const struct skipper_profile *p, const char *path)
{
	struct skipper_error e = { 0 };
	if (skipper_profile_write(p, path, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static void svc_profile_free(void *ctx, struct skipper_profile *p)
{
	skipper_profile_free(p);
}

static int svc_tensor_write(void *ctx, const char *path, const struct skipper_tensor *t, int n)
{
	struct skipper_error e = { 0 };
	const char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
	const float **data = calloc((size_t)(n > 0 ? n : 1), sizeof *data);
	int *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows), *cols = calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
	int rc = SKIPPER_ERR_NOMEM;

	if (names && data && rows && cols) {
		for (int i = 0; i < n; i++) {
			names[i] = t[i].name;
			data[i] = t[i].data;
			rows[i] = t[i].rows;
			cols[i] = t[i].cols;
		}
		rc = skipper_tensors_write(path, n, names, data, rows, cols, &e);
	} else {
		skipper_fail(&e, rc, "out of memory");
	}
	free(names);
	free(data);
	free(rows);
	free(cols);
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_tensor_read(void *ctx, const char *path, const char *name, float *out, size_t capacity, int *rows,
                           int *cols)
{
	struct skipper_error e = { 0 };
	int rc = skipper_tensor_read(path, name, out, capacity, rows, cols, &e);
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

/* Compute services: forward to the engine, turn its error into the plugin's. */
#define FORWARD(fn, ...)                                                                   \
	do {                                                                               \
		const struct skipper_policy_env *env_ = INST(ctx)->env;                    \
		struct skipper_error e_ = { 0 };                                           \
		if (!env_->fn) {                                                           \
			svc_set_error(ctx, #fn ": not available (no model loaded or not " \
			                       "supported by this engine)");              \
			return SKIPPER_POLICY_ERROR;                                       \
		}                                                                          \
		if (env_->fn(env_->engine, __VA_ARGS__, &e_) != SKIPPER_OK) {             \
			svc_set_error(ctx, #fn ": %s", e_.msg[0] ? e_.msg : "failed");    \
			return SKIPPER_POLICY_ERROR;                                       \
		}                                                                          \
		return SKIPPER_POLICY_OK;                                                  \
	} while (0)

static int svc_score_mask(void *ctx, const uint8_t *skip_attn, const uint8_t *skip_mlp, const int32_t *tokens,
                          int n, int start_pos, int32_t *argmax_out)
{
	FORWARD(score_mask, skip_attn, skip_mlp, tokens, n, start_pos, argmax_out);
}

static int svc_sublayer_forward(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states,
                                const int32_t *pos, int n_past)
{
	FORWARD(sublayer_forward, kind, layer, n_seq, seq_len, states, pos, n_past);
}

static int svc_head_argmax(void *ctx, int n, const float *states, int32_t *ids)
{
	FORWARD(head_argmax, n, states, ids);
}

static int svc_time_sublayer(void *ctx, int kind, int layer, int ctx_len, double *seconds)
{
	FORWARD(time_sublayer, kind, layer, ctx_len, seconds);
}

static int svc_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r)
{
	FORWARD(trial, t, r);
}

static int svc_embed_prompt(void *ctx, const char *text, float *out)
{
	FORWARD(embed_prompt, text, out);
}

static const struct skipper_host host_template = {
	.struct_size = sizeof(struct skipper_host),
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
	.model_sha256 = svc_model_sha256,
	.log = svc_log,
	.set_error = svc_set_error,
	.parse_bool = svc_parse_bool,
	.parse_int = svc_parse_int,
	.parse_double = svc_parse_double,
	.parse_layers = svc_parse_layers,
	.format_layers = svc_format_layers,
	.rng_seed = svc_rng_seed,
	.rng_u64 = svc_rng_u64,
	.rng_double = svc_rng_double,
	.now = svc_now,
	.profile_path = svc_profile_path,
	.profile_read = svc_profile_read,
	.profile_new = svc_profile_new,
	.profile_get = svc_profile_get,
	.profile_get_mask = svc_profile_get_mask,
	.profile_section = svc_profile_section,
	.profile_set = svc_profile_set,
	.profile_set_mask = svc_profile_set_mask,
	.profile_write = svc_profile_write,
	.profile_free = svc_profile_free,
	.score_mask = svc_score_mask,
	.sublayer_forward = svc_sublayer_forward,
	.head_argmax = svc_head_argmax,
	.time_sublayer = svc_time_sublayer,
	.trial = svc_trial,
	.embed_prompt = svc_embed_prompt,
	.tensor_write = svc_tensor_write,
	.tensor_read = svc_tensor_read,
};

/* ============================================================= instances */

static void clear_msg(struct skipper_policy_instance *inst)
{
	inst->msg[0] = '\0';
	inst->msg_set = 0;
}

static const char *plugin_msg(const struct skipper_policy_instance *inst, int rc)
{
	if (inst->msg_set && inst->msg[0])
		return inst->msg;
	return rc == SKIPPER_POLICY_NOMEM ? "out of memory" : "failed without a message";
}

/* A hook failed: "policy NAME: HOOK: message". */
static int hook_fail(const struct skipper_policy_instance *inst, const char *hook, int rc, struct skipper_error *err)
{
	return skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_PLUGIN,
	                    "policy %s: %s: %s", inst->lib->desc.name, hook, plugin_msg(inst, rc));
}

static int push_section(struct skipper_policy_instance *inst, const struct skipper_config *cfg,
                        struct skipper_error *err)
{
	const struct skipper_policy *d = &inst->lib->desc;
	const struct skipper_config_entry *const *ents;
	size_t n;

	if (!cfg)
		return SKIPPER_OK;
	n = skipper_config_section(cfg, d->name, &ents);
	for (size_t i = 0; i < n; i++) {
		const struct skipper_config_entry *e = ents[i];
		char where[512];
		int rc;

		if (e->line > 0)
			snprintf(where, sizeof where, "%s:%d", e->file, e->line);
		else
			snprintf(where, sizeof where, "%s", e->file);
		clear_msg(inst);
		rc = d->config ? d->config(inst->state, e->key, e->value) : SKIPPER_POLICY_UNKNOWN_KEY;
		if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: unknown key for policy %s (see skipper policies)", where,
			                    e->section, e->key, d->name);
		if (rc < 0)
			return skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: %s", where, e->section, e->key, plugin_msg(inst, rc));
	}
	return SKIPPER_OK;
}

int skipper_policy_instance_new(struct skipper_policy_lib *lib, const struct skipper_policy_env *env,
                                const struct skipper_config *cfg, struct skipper_policy_instance **out,
                                struct skipper_error *err)
{
	const struct skipper_policy *d = &lib->desc;
	struct skipper_policy_instance *inst;
	int rc;

	*out = NULL;
	if (!(inst = calloc(1, sizeof *inst)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	inst->lib = lib;
	inst->env = env;
	inst->host = host_template;
	inst->host.n_layer = env->n_layer;
	inst->host.n_embd = env->n_embd;
	inst->host.n_vocab = env->n_vocab;
	inst->host.n_ctx = env->n_ctx;
	inst->host.model_name = env->model_name ? env->model_name : "";

	clear_msg(inst);
	rc = d->create(&inst->host, inst, &inst->state);
	if (rc < 0) {
		rc = skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_PLUGIN,
		                  "policy %s (%s): create: %s", d->name, lib->path, plugin_msg(inst, rc));
		free(inst);
		return rc;
	}
	inst->created = 1;
	if ((rc = push_section(inst, cfg, err)))
		goto fail;
	if (d->config_complete) {
		clear_msg(inst);
		if ((rc = d->config_complete(inst->state)) < 0) {
			rc = skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_CONFIG,
			                  "policy %s: [%s] section: %s", d->name, d->name, plugin_msg(inst, rc));
			goto fail;
		}
	}
	inst->needs.flags = d->needs;
	inst->needs.top_k = d->top_k;
	inst->needs.prompt_rows = d->prompt_rows;
	if (d->refine_needs) {
		clear_msg(inst);
		if ((rc = d->refine_needs(inst->state, &inst->needs)) < 0) {
			rc = hook_fail(inst, "refine_needs", rc, err);
			goto fail;
		}
	}
	if (!(inst->needs.flags & SKIPPER_NEED_TOPK))
		inst->needs.top_k = 1;
	else if (inst->needs.top_k <= 0)
		inst->needs.top_k = 10;
	if (inst->needs.top_k > SKIPPER_TOPK_MAX)
		inst->needs.top_k = SKIPPER_TOPK_MAX;
	if (inst->needs.prompt_rows <= 0)
		inst->needs.prompt_rows = 1;
	*out = inst;
	return SKIPPER_OK;
fail:
	skipper_policy_instance_free(inst);
	return rc;
}

void skipper_policy_instance_free(struct skipper_policy_instance *inst)
{
	if (!inst)
		return;
	if (inst->created)
		inst->lib->desc.destroy(inst->state);
	free(inst);
}

int skipper_policy_check_config(struct skipper_policy_lib *lib, const struct skipper_config *cfg,
                                struct skipper_error *err)
{
	/* n_layer = 0 tells the plugin there is no model; the profile setting
	 * is passed (unresolved) so that checks of "is there a profile" agree
	 * with the real run. */
	struct skipper_policy_env no_model = { 0 };
	struct skipper_policy_instance *inst;
	int rc;

	no_model.profile_path = cfg ? skipper_config_get(cfg, "policy", "profile") : NULL;
	rc = skipper_policy_instance_new(lib, &no_model, cfg, &inst, err);
	if (rc == SKIPPER_OK)
		skipper_policy_instance_free(inst);
	return rc;
}

const struct skipper_policy *skipper_policy_instance_desc(const struct skipper_policy_instance *inst)
{
	return &inst->lib->desc;
}

void *skipper_policy_instance_state(const struct skipper_policy_instance *inst)
{
	return inst->state;
}

const char *skipper_policy_instance_message(const struct skipper_policy_instance *inst)
{
	return inst->msg_set ? inst->msg : "";
}

void skipper_policy_instance_clear_message(struct skipper_policy_instance *inst)
{
	clear_msg(inst);
}

const struct skipper_needs *skipper_policy_instance_needs(const struct skipper_policy_instance *inst)
{
	return &inst->needs;
}

double skipper_policy_instance_seconds(const struct skipper_policy_instance *inst)
{
	return inst->seconds;
}

/* ---------------------------------------------------------- hook wrappers */

#define TIMED(inst, call)                                        \
	({                                                       \
		double t0_ = mono_now();                         \
		clear_msg(inst);                                 \
		int rc_ = (call);                                \
		(inst)->seconds += mono_now() - t0_;             \
		rc_;                                             \
	})

int skipper_policy_begin(struct skipper_policy_instance *inst, const struct skipper_request *req,
                         struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.begin)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.begin(inst->state, req));
	return rc < 0 ? hook_fail(inst, "begin", rc, err) : SKIPPER_OK;
}

int skipper_policy_select_draft(struct skipper_policy_instance *inst, struct skipper_plan *plan,
                                struct skipper_error *err)
{
	int cap = plan->max_draft > 0 ? plan->max_draft : 0;
	int rc;

	memset(plan->skip_attn, 0, (size_t)plan->n_layer);
	memset(plan->skip_mlp, 0, (size_t)plan->n_layer);
	if (!inst->lib->desc.select_draft) {
		plan->max_draft = 0;
		return SKIPPER_OK;
	}
	rc = TIMED(inst, inst->lib->desc.select_draft(inst->state, plan));
	if (rc < 0)
		return hook_fail(inst, "select_draft", rc, err);
	if (plan->max_draft < 0)
		plan->max_draft = 0;
	if (plan->max_draft > cap)
		plan->max_draft = cap;
	for (int l = 0; l < plan->n_layer; l++) {
		plan->skip_attn[l] = plan->skip_attn[l] != 0;
		plan->skip_mlp[l] = plan->skip_mlp[l] != 0;
	}
	return SKIPPER_OK;
}

int skipper_policy_should_exit(struct skipper_policy_instance *inst, const struct skipper_step *step, int *stop,
                               struct skipper_error *err)
{
	int rc;
	*stop = 0;
	if (!inst->lib->desc.should_exit)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.should_exit(inst->state, step));
	if (rc < 0)
		return hook_fail(inst, "should_exit", rc, err);
	*stop = rc > 0;
	return SKIPPER_OK;
}

int skipper_policy_verify(struct skipper_policy_instance *inst, const struct skipper_draft *draft,
                          struct skipper_tree *tree, struct skipper_error *err)
{
	const char *name = inst->lib->desc.name;
	int n_vocab = inst->env->n_vocab;
	int rc;

	tree->n = 0;
	if (tree->chain_node)
		for (int i = 0; i < tree->capacity; i++)
			tree->chain_node[i] = -1;
	if (!inst->lib->desc.verify)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.verify(inst->state, draft, tree));
	if (rc < 0)
		return hook_fail(inst, "verify", rc, err);
	if (tree->n < 0 || tree->n > tree->capacity)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN, "policy %s: verify: tree of %d nodes, capacity is %d", name,
		                    tree->n, tree->capacity);
	for (int i = 0; i < tree->n; i++) {
		if (tree->parent[i] < -1 || tree->parent[i] >= i)
			return skipper_fail(err, SKIPPER_ERR_PLUGIN,
			                    "policy %s: verify: node %d has parent %d (must be -1 or an earlier node)", name,
			                    i, tree->parent[i]);
		if (tree->tokens[i] < 0 || (n_vocab > 0 && tree->tokens[i] >= n_vocab))
			return skipper_fail(err, SKIPPER_ERR_PLUGIN, "policy %s: verify: node %d has token %d outside the vocabulary",
			                    name, i, tree->tokens[i]);
	}
	if (tree->chain_node)
		for (int j = 0; j < draft->n && j < tree->capacity; j++)
			if (tree->chain_node[j] < -1 || tree->chain_node[j] >= tree->n)
				return skipper_fail(err, SKIPPER_ERR_PLUGIN,
				                    "policy %s: verify: chain_node[%d] = %d is not a node", name, j,
				                    tree->chain_node[j]);
	return SKIPPER_OK;
}

int skipper_policy_on_accept(struct skipper_policy_instance *inst, const struct skipper_verdict *v,
                             struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.on_accept)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.on_accept(inst->state, v));
	return rc < 0 ? hook_fail(inst, "on_accept", rc, err) : SKIPPER_OK;
}

int skipper_policy_end(struct skipper_policy_instance *inst, const struct skipper_stats *stats,
                       struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.end)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.end(inst->state, stats));
	return rc < 0 ? hook_fail(inst, "end", rc, err) : SKIPPER_OK;
}

int skipper_policy_calibrate(struct skipper_policy_instance *inst, const struct skipper_calibrate *c,
                             struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.calibrate)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "policy %s has no offline calibration",
		                    inst->lib->desc.name);
	rc = TIMED(inst, inst->lib->desc.calibrate(inst->state, c));
	return rc < 0 ? hook_fail(inst, "calibrate", rc, err) : SKIPPER_OK;
}
