/* core/backend/ -- the compute backend interface (DESIGN §3) and backend
 * selection. One vtable, two implementations: the CPU backend in
 * core/backend/cpu/, the CUDA backend in kernels/ (a dlopen'ed module, found
 * and version-checked by backend.c). Backends see the model as the view
 * of backend_abi.h, not the loader's struct. May include: core/model/
 * (tensor types), error.h. Called by the engine and the CLI.
 *
 * KV cache model: the backend owns n_ctx slots per layer. The engine tracks the
 * committed length; the backend never advances it by itself. A forward call
 * names the committed prefix [0, n_past) that every row attends to; row i of
 * the batch additionally attends to its ancestors inside the batch (parent
 * chain) and to itself. */
#ifndef SKIPPER_BACKEND_H
#define SKIPPER_BACKEND_H

#include <stdint.h>

#include "backend_abi.h"

/* Create the backend o->kind names. CUDA comes from the dlopen'ed module
 * skipper-backend-cuda.so; when it cannot be used (no module, no device,
 * driver too old) kind CUDA fails with SKIPPER_ERR_UNSUPPORTED and a message
 * saying why, and kind AUTO falls back to the CPU. *out owned by the caller:
 * out->ops->destroy(out). */
int skipper_backend_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                           struct skipper_backend **out, struct skipper_error *err);

/* CPU backend. *out owned by the caller: out->ops->destroy(out). */
int skipper_backend_cpu_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                               struct skipper_backend **out, struct skipper_error *err);

#endif
