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
#include "base/module.h"

#define CUDA_MODULE_FILE "skipper-backend-cuda.so"

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
static int cuda_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                       struct skipper_backend **out, struct skipper_error *err)
{
	struct skipper_module_path mp;
	const struct skipper_backend_module *mod;
	struct skipper_error e = { 0 };
	void (*fn)(void);
	char tried[1024], *path;
	void *h;
	int rc;

	if (skipper_module_path_get(&mp, NULL))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	path = skipper_module_find(&mp, CUDA_MODULE_FILE, tried, sizeof tried);
	skipper_module_path_free(&mp);
	if (!path)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "backend cuda: module %s not found in %s (set SKIPPER_PLUGIN_PATH; "
		                    "this build may have been configured without CUDA)",
		                    CUDA_MODULE_FILE, tried);
	h = skipper_module_open(path, "skipper backend module", SKIPPER_BACKEND_MODULE_ENTRY, 1, &fn, &e);
	if (!h) {
		free(path);
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "backend cuda: %s", e.msg);
	}
	mod = ((skipper_backend_module_init_fn)fn)();
	if (!mod || mod->abi != SKIPPER_BACKEND_MODULE_ABI || !mod->version ||
	    strcmp(mod->version, PACKAGE_VERSION) != 0 ||
	    mod->sizeof_view != sizeof(struct skipper_model_view) ||
	    mod->sizeof_forward != sizeof(struct skipper_forward) ||
	    mod->sizeof_ops != sizeof(struct skipper_backend_ops) || !mod->probe || !mod->create) {
		rc = skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                  "backend cuda: refused %s: built for skipper %s (module ABI %u), this is "
		                  "skipper %s (ABI %d); install the module from the same build",
		                  path, mod && mod->version ? mod->version : "?", mod ? mod->abi : 0u,
		                  PACKAGE_VERSION, SKIPPER_BACKEND_MODULE_ABI);
		free(path);
		dlclose(h);
		return rc;
	}
	free(path);
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

int skipper_backend_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
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

uint64_t skipper_backend_kv_bytes(const struct skipper_hparams *hp, int n_ctx, int kv_type)
{
	uint64_t row = kv_type == SKIPPER_KV_Q8_0 ? (uint64_t)hp->head_dim / 32 * 34 : (uint64_t)hp->head_dim * 2;
	return 2 * (uint64_t)hp->n_layer * (uint64_t)hp->n_head_kv * row * (uint64_t)n_ctx;
}

const char *skipper_kv_type_name(int kv_type)
{
	return kv_type == SKIPPER_KV_Q8_0 ? "q8_0" : "f16";
}
