/* Backend selection: the CPU backend is built in; the CUDA backend is a
 * module (kernels/) so that libskipper never links the CUDA runtime. */
#include "build-config.h"

#include "backend.h"
#include "error.h"

int skipper_backend_create(const struct skipper_model *m, const struct skipper_backend_opts *o,
                           struct skipper_backend **out, struct skipper_error *err)
{
	if (o->kind == SKIPPER_BACKEND_CUDA)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "backend cuda: this build has no CUDA backend module");
	return skipper_backend_cpu_create(m, o, out, err);
}
