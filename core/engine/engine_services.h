/* Engine-side implementations of the policy host's compute services; the
 * engine pointer is the `engine` member of struct skipper_policy_env. */
#ifndef SKIPPER_ENGINE_SERVICES_H
#define SKIPPER_ENGINE_SERVICES_H

#include <stdint.h>

#include "skipper/status.h"

int skipper_engine_score_mask(void *engine, const uint8_t *skip_attn, const uint8_t *skip_mlp,
                              const int32_t *tokens, int n, int start_pos, int32_t *argmax_out,
                              struct skipper_error *err);
int skipper_engine_sublayer_forward(void *engine, int kind, int layer, int n_seq, int seq_len, float *states,
                                    const int32_t *pos, int n_past, struct skipper_error *err);
int skipper_engine_head_argmax(void *engine, int n, const float *states, int32_t *ids, struct skipper_error *err);
int skipper_engine_time_sublayer(void *engine, int kind, int layer, int ctx_len, double *seconds,
                                 struct skipper_error *err);

#endif
