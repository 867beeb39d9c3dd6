/* Policy host, part 1: finding and loading plugins with the ABI rules of
 * DESIGN §5 (search path, dlopen, descriptor checks) and listing what is
 * installed (skipper policies). */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-config.h"
#include "base/error.h"
#include "base/module.h"
#include "policy_internal.h"

#define PLUGIN_PREFIX "skipper-policy-"
#define PLUGIN_SUFFIX ".so"

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
	/* a plugin from before the thread model was never told that its
	 * instances might run at the same time */
	if (d->abi_minor < 2)
		lib->desc.thread_model = SKIPPER_THREAD_MODEL_SERIALIZE_ALL;
	if (lib->desc.thread_model != SKIPPER_THREAD_MODEL_PARALLEL_INSTANCES &&
	    lib->desc.thread_model != SKIPPER_THREAD_MODEL_SERIALIZE_ALL)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN,
		                    "%s: refused: policy '%s' declares thread model %d (known: %d, %d)", path,
		                    lib->desc.name, lib->desc.thread_model, SKIPPER_THREAD_MODEL_PARALLEL_INSTANCES,
		                    SKIPPER_THREAD_MODEL_SERIALIZE_ALL);
	lib->serialize = lib->desc.thread_model == SKIPPER_THREAD_MODEL_SERIALIZE_ALL;
	if (!lib->desc.version)
		lib->desc.version = "";
	if (!lib->desc.description)
		lib->desc.description = "";
	if (!lib->desc.config_help)
		lib->desc.config_help = "";
	return SKIPPER_OK;
}

/* The files loaded now. A file loaded again shares its library: a
 * serialised plugin's instances share its globals, so they must share its
 * lock too. loaded_lock also keeps calls of skipper_policy_init one at a
 * time (SKIPPER_POLICY_REGISTER writes the plugin's copy of its
 * descriptor there). */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static struct skipper_policy_lib *loaded;

static struct skipper_policy_lib *lib_new(const char *path, struct skipper_error *err)
{
	struct skipper_policy_lib *lib = calloc(1, sizeof *lib);
	if (!lib || !(lib->path = strdup(path))) {
		free(lib);
		skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		return NULL;
	}
	lib->refs = 1;
	pthread_mutex_init(&lib->lock, NULL);
	return lib;
}

static void lib_free(struct skipper_policy_lib *lib)
{
	if (lib->handle)
		dlclose(lib->handle);
	pthread_mutex_destroy(&lib->lock);
	free(lib->path);
	free(lib);
}

void skipper_policy_unload(struct skipper_policy_lib *lib)
{
	if (!lib)
		return;
	if (lib->handle) {
		pthread_mutex_lock(&loaded_lock);
		if (--lib->refs == 0)
			for (struct skipper_policy_lib **p = &loaded; *p; p = &(*p)->next)
				if (*p == lib) {
					*p = lib->next;
					break;
				}
		pthread_mutex_unlock(&loaded_lock);
		if (lib->refs > 0)
			return;
	}
	lib_free(lib);
}

/* The descriptor of a file just opened (handle, entry point fn);
 * loaded_lock held. */
static int open_lib(const char *path, void *handle, void (*fn)(void), struct skipper_policy_lib **out,
                    struct skipper_error *err)
{
	struct skipper_policy_lib *lib;
	skipper_policy_init_fn init;
	const struct skipper_policy *d;
	int rc;

	if (!(lib = lib_new(path, err))) {
		dlclose(handle);
		return SKIPPER_ERR_NOMEM;
	}
	lib->handle = handle;
	init = (skipper_policy_init_fn)fn;
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
	lib_free(lib);
	return rc;
}

int skipper_policy_load_file(const char *path, struct skipper_policy_lib **out, struct skipper_error *err)
{
	struct skipper_policy_lib *lib;
	void (*fn)(void);
	void *handle;
	int rc = SKIPPER_OK;

	*out = NULL;
	if (access(path, F_OK) != 0)
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: policy plugin not found", path);
	if (!(handle = skipper_module_open(path, "policy plugin", "skipper_policy_init", 0, &fn, err)))
		return err ? err->status : SKIPPER_ERR_PLUGIN;
	pthread_mutex_lock(&loaded_lock);
	for (lib = loaded; lib && lib->handle != handle; lib = lib->next)
		;
	if (lib) {
		lib->refs++;
		dlclose(handle); /* the library holds its own reference */
	} else if ((rc = open_lib(path, handle, fn, &lib, err)) == SKIPPER_OK) {
		lib->next = loaded;
		loaded = lib;
	}
	pthread_mutex_unlock(&loaded_lock);
	if (rc == SKIPPER_OK)
		*out = lib;
	return rc;
}

int skipper_policy_load_builtin(const struct skipper_policy *desc, struct skipper_policy_lib **out,
                                struct skipper_error *err)
{
	struct skipper_policy_lib *lib;
	struct skipper_policy d = *desc; /* built with this header: the ABI fields may be left to us */
	int rc;

	*out = NULL;
	if (!(lib = lib_new("<built-in>", err)))
		return SKIPPER_ERR_NOMEM;
	skipper_policy_fill_abi(&d);
	if ((rc = check_desc(lib, &d, err))) {
		lib_free(lib);
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

static int path_get(const struct skipper_policy_search *s, struct skipper_module_path *mp)
{
	return skipper_module_path_get(mp, s ? s->plugin_dir : NULL);
}

static char *plugin_file(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + sizeof PLUGIN_PREFIX + sizeof PLUGIN_SUFFIX + 2;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s/%s%s%s", dir, PLUGIN_PREFIX, name, PLUGIN_SUFFIX);
	return p;
}

/* skipper-policy-NAME.so (NAME already checked) */
static char *plugin_name(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", PLUGIN_PREFIX, name, PLUGIN_SUFFIX);
	return buf;
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
	struct skipper_module_path mp;
	char tried[SKIPPER_ERROR_MAX / 2], fname[256], *file;
	int rc;

	*out = NULL;
	if (strchr(name, '/')) {
		/* fine in the user's own configuration, never in a file from a hub
		 * (profiles refuse such a method): say which it was taken for */
		if ((rc = skipper_policy_load_file(name, out, err)))
			skipper_fail_prefix(err, "policy '%s' is a path (a name with a '/')", name);
		return rc;
	}
	if (!valid_policy_name(name) || strlen(name) > 128)
		return skipper_fail(err, SKIPPER_ERR_CONFIG,
		                    "policy name '%.128s': only letters, digits, '_' and '-' (or a path to a .so)", name);
	if ((b = find_builtin(name, search)))
		return skipper_policy_load_builtin(b, out, err);
	if (path_get(search, &mp))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	file = skipper_module_find(&mp, plugin_name(name, fname, sizeof fname), tried, sizeof tried);
	skipper_module_path_free(&mp);
	if (!file)
		return skipper_fail(err, SKIPPER_ERR_NOT_FOUND,
		                    "policy '%s' not found: no %s in %s (set [policy] plugin_dir or SKIPPER_PLUGIN_PATH)",
		                    name, fname, tried);
	/* The first file found is the policy: a broken one is an error, never
	 * silently replaced by one further down the path. */
	rc = skipper_policy_load_file(file, out, err);
	if (rc == SKIPPER_OK && strcmp((*out)->desc.name, name) != 0) {
		rc = skipper_fail(err, SKIPPER_ERR_PLUGIN, "%s: refused: the plugin calls itself '%s', not '%s'", file,
		                  (*out)->desc.name, name);
		skipper_policy_unload(*out);
		*out = NULL;
	}
	free(file);
	return rc;
}

int skipper_policy_exists(const char *name, const struct skipper_policy_search *search)
{
	struct skipper_module_path mp;
	char fname[256], tried[1], *file;

	if (!valid_policy_name(name) || strlen(name) > 128)
		return 0;
	if (find_builtin(name, search))
		return 1;
	if (path_get(search, &mp))
		return 0;
	file = skipper_module_find(&mp, plugin_name(name, fname, sizeof fname), tried, 0);
	skipper_module_path_free(&mp);
	if (!file)
		return 0;
	free(file);
	return 1;
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
	struct skipper_module_path dl;
	size_t n_builtin;
	int rc = SKIPPER_OK;

	*out = NULL;
	*n = 0;
	if (search && search->builtins)
		for (const struct skipper_policy *const *b = search->builtins; *b && !rc; b++)
			if ((*b)->name && !list_has(&a, (*b)->name))
				rc = list_add(&a, (*b)->name, "<built-in>", *b, NULL);
	n_builtin = a.n;
	if (rc || path_get(search, &dl)) {
		skipper_policy_list_free(a.v, a.n);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < dl.n && !rc; i++) {
		char **names;
		size_t nn;
		if ((rc = scan_dir(dl.dir[i], &names, &nn)))
			break;
		for (size_t j = 0; j < nn; j++) {
			if (!rc && !list_has(&a, names[j])) {
				struct skipper_policy_lib *lib;
				struct skipper_error e = { 0 };
				char *file = plugin_file(dl.dir[i], names[j]);
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
	skipper_module_path_free(&dl);
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
