/* A CUDA backend module stand-in for the loader tests: the right entry
 * point, a foreign skipper version, so the loader must refuse it by name. */
#include "skipper/backend_abi.h"

static int probe(int device, struct skipper_error *err)
{
	(void)device;
	(void)err;
	return 0;
}

static int create(const struct skipper_model *m, const struct skipper_backend_opts *o,
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
	.sizeof_model = sizeof(struct skipper_model),
	.sizeof_forward = sizeof(struct skipper_forward),
	.sizeof_ops = sizeof(struct skipper_backend_ops),
	.version = "0.0.0-other",
	.name = "cuda",
	.probe = probe,
	.create = create,
};

const struct skipper_backend_module *skipper_backend_module_init(void);
const struct skipper_backend_module *skipper_backend_module_init(void)
{
	return &module;
}
