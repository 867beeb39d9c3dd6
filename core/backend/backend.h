/* core/backend/ -- the compute backend interface (DESIGN §3) and backend
 * selection. One vtable, two implementations: the CPU backend in
 * core/backend/cpu/, the CUDA backend in kernels/ (a dlopen'ed module, found
 * and version-checked by backend.c). Backends see the model as the view
 * of backend_abi.h, not the loader's struct. May include: core/model/
 * (tensor types), error.h. Called by the engine and the CLI.
 *
 * KV cache model: the backend owns n_ctx slots per layer for each of its
 * n_seq sequences (one, unless set_sequences made room for more: a server's
 * requests decoded together). The engine tracks each committed length; the
 * backend never advances it by itself. A forward call names, for each
 * sequence it carries rows of, the committed prefix [0, n_past) those rows
 * attend to; a row additionally attends to its ancestors inside the batch
 * (parent chain, within its sequence) and to itself. */
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

/* Bytes of one sequence's K/V cache (keys and values) at n_ctx tokens in
 * the layout kv_type names (enum skipper_kv_type), as both backends and
 * llama.cpp store them: f16 2 bytes an element, q8_0 34 bytes a block of
 * 32. */
uint64_t skipper_backend_kv_bytes(const struct skipper_hparams *hp, int n_ctx, int kv_type);

/* "f16", "q8_0". */
const char *skipper_kv_type_name(int kv_type);

/* CPU backend. *out owned by the caller: out->ops->destroy(out). */
int skipper_backend_cpu_create(const struct skipper_model_view *m, const struct skipper_backend_opts *o,
                               struct skipper_backend **out, struct skipper_error *err);

/* The calls a caller makes into a backend (the engine, the CLI, tests):
 * each checks what the caller gives once, the same for every backend,
 * failing with SKIPPER_ERR_ARG (a batch past the context:
 * SKIPPER_ERR_RANGE) and "<name> backend: what", then runs the backend's op
 * (struct skipper_backend_ops says what each does). */
int skipper_backend_forward(struct skipper_backend *be, const struct skipper_forward *fw, struct skipper_error *err);
int skipper_backend_kv_move(struct skipper_backend *be, int seq, const int32_t *src, const int32_t *dst, int n,
                            struct skipper_error *err);
int skipper_backend_kv_read(struct skipper_backend *be, int seq, int layer, int slot, float *k, float *v,
                            struct skipper_error *err);
int skipper_backend_sublayer(struct skipper_backend *be, int seq, int kind, int layer, int n, float *states,
                             const int32_t *pos, int n_past, struct skipper_error *err);
int skipper_backend_head_argmax(struct skipper_backend *be, int n, const float *states, int32_t *ids,
                                struct skipper_error *err);
/* A ctx_len past the last slot times the last slot. */
int skipper_backend_time_sublayer(struct skipper_backend *be, int kind, int layer, int ctx_len, double *seconds,
                                  struct skipper_error *err);
/* Room for n KV sequences (n >= 1): SKIPPER_ERR_UNSUPPORTED, saying so,
 * where the backend decodes one sequence at a time. */
int skipper_backend_set_sequences(struct skipper_backend *be, int n, struct skipper_error *err);
/* The prefix record, for reusing a prompt's cache: after a request the
 * engine notes that sequence seq's first n slots hold the K/V of
 * tokens[0..n) (kv_note; SKIPPER_ERR_NOMEM, or n out of range); every
 * call above that writes a slot forgets what the record said from that
 * slot on (forward, kv_move, sublayer; time_sublayer and set_sequences
 * forget everything), so kv_prefix, the number of leading tokens[0..n)
 * whose K/V the sequence holds at their positions, is never more than the
 * cache holds. */
int skipper_backend_kv_note(struct skipper_backend *be, int seq, const int32_t *tokens, int n,
                            struct skipper_error *err);
int skipper_backend_kv_prefix(const struct skipper_backend *be, int seq, const int32_t *tokens, int n);
/* The backend's identity (skipper_backend_ops.identity) into buf. */
void skipper_backend_identity(struct skipper_backend *be, char *buf, size_t n);
/* SKIPPER_ERR_UNSUPPORTED where the backend has no head subset. */
int skipper_backend_set_head_subset(struct skipper_backend *be, const int32_t *ids, int n,
                                    struct skipper_error *err);

#endif
