/* CUDA backend module stand-ins for the loader tests.
 *
 * Default: the right entry point, a foreign skipper version, so the loader
 * must refuse it by name (tests/t-backend-select.sh).
 *
 * NO_DEVICE: this skipper's version, and a probe that finds no device, as
 * the real module does on a machine without a GPU. Like the CUDA runtime
 * and cuBLAS the real module links, it allocates a block when it is loaded
 * and keeps it for the life of the library (tests/t-backend-module.c). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_abi.h"

#ifdef NO_DEVICE
static void *pool; /* the C++ runtime's emergency pool, in cuBLAS */

__attribute__((constructor)) static void load(void)
{
	pool = malloc(72704);
}

static int probe(int device, struct skipper_error *err)
{
	(void)device;
	if (err) {
		err->status = SKIPPER_ERR_UNSUPPORTED;
		strcpy(err->msg, "backend cuda: no CUDA device (fake module)");
	}
	return pool ? SKIPPER_ERR_UNSUPPORTED : SKIPPER_ERR_NOMEM;
}
#else
static int probe(int device, struct skipper_error *err)
{
	(void)device;
	(void)err;
	return 0;
}
#endif

static int create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                  struct skipper_backend **out, struct skipper_error *err)
{
	(void)m;
	(void)o;
	(void)err;
	*out = 0;
	return SKIPPER_ERR_INTERNAL;
}

static const struct skipper_backend_module module = {
	.abi = SKIPPER_BACKEND_MODULE_ABI,
	.sizeof_view = sizeof(struct skipper_model_view),
	.sizeof_forward = sizeof(struct skipper_forward),
	.sizeof_ops = sizeof(struct skipper_backend_ops),
#ifdef NO_DEVICE
	.version = SKIPPER_MODULE_VERSION,
#else
	.version = "0.0.0-other",
#endif
	.name = "cuda",
	.probe = probe,
	.create = create,
};

const struct skipper_backend_module *skipper_backend_module_init(void);
const struct skipper_backend_module *skipper_backend_module_init(void)
{
	return &module;
}
