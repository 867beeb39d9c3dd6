/* Backend selection: the CPU backend is built in; the CUDA backend is a
 * module (kernels/) so that libskipper never links the CUDA runtime. The
 * module is looked up like policy plugins: each directory of
 * SKIPPER_PLUGIN_PATH, then SKIPPER_PLUGINDIR (where it is installed). */
#include "build-config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "base/error.h"

#ifndef SKIPPER_PLUGINDIR
#define SKIPPER_PLUGINDIR "/usr/local/lib/skipper/plugins"
#endif

#define CUDA_MODULE_FILE "skipper-backend-cuda.so"

/* First existing dir/file along the search path, into path[cap]; 0 if none.
 * tried[] gets the directories looked in, for the error message. */
static int find_module(const char *file, char *path, size_t cap, char *tried, size_t tcap)
{
	const char *envp = getenv("SKIPPER_PLUGIN_PATH");
	const char *p = envp ? envp : "";
	size_t used = 0;

	tried[0] = '\0';
	for (;;) {
		/* one entry of the colon list; the built-in directory comes last */
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *dir = p;
		int last = 0;
		if (!*p && !end) {
			dir = SKIPPER_PLUGINDIR;
			len = strlen(dir);
			last = 1;
		}
		if (len > 0) {
			int k = snprintf(path, cap, "%.*s/%s", (int)len, dir, file);
			if (k > 0 && (size_t)k < cap && access(path, F_OK) == 0)
				return 1;
			if (used < tcap) {
				k = snprintf(tried + used, tcap - used, "%s%.*s", used ? ", " : "", (int)len, dir);
				used += k > 0 ? (size_t)k : 0;
			}
		}
		if (last)
			return 0;
		p = end ? end + 1 : p + len;
	}
}

/* Load the module and create a CUDA backend. Every failure is
 * SKIPPER_ERR_UNSUPPORTED with the reason, except a failure of a usable
 * device while creating (out of memory, kernel errors), which keeps the
 * module's own status.
 *
 * The module stays loaded for the life of the process once dlopen()ed
 * (RTLD_NODELETE), even when it is refused or finds no device: a created
 * backend's code lives in it, and loading it has already run the
 * constructors of the CUDA runtime and cuBLAS it links. libcublas.so and
 * libcublasLt.so each carry a static copy of the C++ runtime whose
 * constructor allocates its exception-handling emergency pool (72,704
 * bytes) and never frees it; unloading them would turn those two blocks
 * into a leak from an unmapped library, which LeakSanitizer reports as
 * "<unknown module>". Resident, they stay reachable, as in any process that
 * links cuBLAS. A second attempt gets the same handle back, so it costs
 * nothing. tests/t-backend-module checks the module stays mapped. */
static int cuda_create(const struct skipper_model *m, const struct skipper_backend_opts *o,
                       struct skipper_backend **out, struct skipper_error *err)
{
	char path[4096], tried[1024];
	const struct skipper_backend_module *mod;
	skipper_backend_module_init_fn init;
	void *h, *sym;
	const char *why;
	int rc;

	if (!find_module(CUDA_MODULE_FILE, path, sizeof path, tried, sizeof tried))
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "backend cuda: module %s not found in %s (set SKIPPER_PLUGIN_PATH; "
		                    "this build may have been configured without CUDA)",
		                    CUDA_MODULE_FILE, tried);
	dlerror();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		why = dlerror();
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "backend cuda: cannot load %s: %s", path,
		                    why ? why : "unknown dlopen error");
	}
	dlerror();
	sym = dlsym(h, SKIPPER_BACKEND_MODULE_ENTRY);
	if (!sym) {
		dlclose(h);
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "backend cuda: %s is not a skipper backend module (no %s)", path,
		                    SKIPPER_BACKEND_MODULE_ENTRY);
	}
	/* POSIX guarantees object/function pointer conversion for dlsym. */
	memcpy(&init, &sym, sizeof init);
	mod = init();
	if (!mod || mod->abi != SKIPPER_BACKEND_MODULE_ABI || !mod->version ||
	    strcmp(mod->version, PACKAGE_VERSION) != 0 ||
	    mod->sizeof_model != sizeof(struct skipper_model) ||
	    mod->sizeof_forward != sizeof(struct skipper_forward) ||
	    mod->sizeof_ops != sizeof(struct skipper_backend_ops) || !mod->probe || !mod->create) {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                  "backend cuda: refused %s: built for skipper %s (module ABI %u), this is "
		                  "skipper %s (ABI %d); install the module from the same build",
		                  path, mod && mod->version ? mod->version : "?", mod ? mod->abi : 0u,
		                  PACKAGE_VERSION, SKIPPER_BACKEND_MODULE_ABI);
		dlclose(h);
		return rc;
	}
	if ((rc = mod->probe(o->device, err))) {
		dlclose(h);
		return rc;
	}
	/* from here the module's code may be referenced by *out */
	return mod->create(m, o, out, err);
}

/* Is the NVIDIA driver library there at all? Checked before kind auto loads
 * the module, because loading it maps the CUDA runtime and cuBLAS (hundreds
 * of MiB, half a second) only to find no device on CPU-only machines. */
static int have_cuda_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

int skipper_backend_create(const struct skipper_model *m, const struct skipper_backend_opts *o,
                           struct skipper_backend **out, struct skipper_error *err)
{
	*out = NULL;
	if (o->kind == SKIPPER_BACKEND_CUDA)
		return cuda_create(m, o, out, err);
	if (o->kind == SKIPPER_BACKEND_AUTO && have_cuda_driver()) {
		struct skipper_error e2 = { 0 };
		int rc = cuda_create(m, o, out, &e2);
		/* no module or no usable device: the CPU, silently. A device that
		 * is there but fails (out of memory) is an error the user should
		 * see rather than a silent 100x slowdown. */
		if (rc != SKIPPER_ERR_UNSUPPORTED) {
			if (rc && err)
				*err = e2;
			return rc;
		}
	}
	return skipper_backend_cpu_create(m, o, out, err);
}
