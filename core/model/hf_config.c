/* A Hugging Face config.json as the hyper-parameters GGUF would carry:
 * the transformers names (num_hidden_layers, rope_theta, rope_scaling or
 * transformers 5's rope_parameters, ...) with transformers' defaults where
 * a key may be absent, and a clear refusal of what these architectures'
 * kernels do not compute (sliding windows, partial rotary, other
 * activations, other RoPE scalings). */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "model_impl.h"

/* An integer key: absent or null -> def (or an error when required). */
static int get_int(struct loader *L, json_t *cfg, const char *key, int required, int def, int *out)
{
	json_t *v = json_object_get(cfg, key);
	if (!v || json_is_null(v)) {
		if (required)
			return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing key \"%s\"", L->path, key);
		*out = def;
		return SKIPPER_OK;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: \"%s\" is not a non-negative 32-bit integer", L->path,
		                    key);
	*out = (int)json_integer_value(v);
	return SKIPPER_OK;
}

static int get_float(struct loader *L, json_t *obj, const char *key, float def, float *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return SKIPPER_OK;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: \"%s\" is not a finite number", L->path, key);
	*out = (float)json_number_value(v);
	return SKIPPER_OK;
}

/* rope_scaling (or rope_parameters): "default" / absent, "linear" or
 * "llama3"; the rest of transformers' kinds (yarn, dynamic, longrope) are
 * computed differently and refused. */
static int rope_scaling(struct loader *L, json_t *cfg)
{
	struct skipper_hparams *hp = &L->m->view.hp;
	json_t *s = json_object_get(cfg, "rope_scaling");
	const char *key = "rope_scaling";
	int rc;

	if (!json_is_object(s)) {
		s = json_object_get(cfg, "rope_parameters");
		key = "rope_parameters";
	}
	hp->rope_scaling = SKIPPER_ROPE_SCALING_NONE;
	hp->rope_factor = 1.0f;
	hp->rope_low_freq_factor = 1.0f;
	hp->rope_high_freq_factor = 4.0f;
	hp->rope_orig_ctx = hp->n_ctx_train;
	if (!json_is_object(s))
		return SKIPPER_OK;
	const char *type = json_string_value(json_object_get(s, "rope_type"));
	if (!type)
		type = json_string_value(json_object_get(s, "type"));
	if (!type || strcmp(type, "default") == 0)
		return SKIPPER_OK;
	if (strcmp(type, "linear") == 0)
		hp->rope_scaling = SKIPPER_ROPE_SCALING_LINEAR;
	else if (strcmp(type, "llama3") == 0)
		hp->rope_scaling = SKIPPER_ROPE_SCALING_LLAMA3;
	else
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: %s.rope_type = \"%.32s\" is not supported (default, linear and llama3 are)", L->path,
		                    key, type);
	if ((rc = get_float(L, s, "factor", 1.0f, &hp->rope_factor)) ||
	    (rc = get_float(L, s, "low_freq_factor", 1.0f, &hp->rope_low_freq_factor)) ||
	    (rc = get_float(L, s, "high_freq_factor", 4.0f, &hp->rope_high_freq_factor)))
		return rc;
	return get_int(L, s, "original_max_position_embeddings", 0, hp->n_ctx_train, &hp->rope_orig_ctx);
}

int model_hf_config(struct loader *L, json_t *cfg)
{
	struct skipper_hparams *hp = &L->m->view.hp;
	const char *type = json_string_value(json_object_get(cfg, "model_type"));
	json_t *archs = json_object_get(cfg, "architectures"), *rp = json_object_get(cfg, "rope_parameters");
	const char *cls = json_string_value(json_array_get(archs, 0)), *act;
	int rc;

	if (!type)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: missing string \"model_type\"", L->path);
	if (!(L->arch = model_arch(type, strlen(type))))
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: model_type \"%.32s\" is not supported (llama, qwen2 and qwen3 are)", L->path, type);
	if (cls && (strlen(cls) < 11 || strcmp(cls + strlen(cls) - 11, "ForCausalLM")))
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: architectures[0] = \"%.64s\": only causal language models (...ForCausalLM) generate",
		                    L->path, cls);
	snprintf(L->m->view.arch, sizeof L->m->view.arch, "%s", L->arch->name);
	L->m->view.arch_id = L->arch->id;

	if ((rc = get_int(L, cfg, "num_hidden_layers", 1, 0, &hp->n_layer)) ||
	    (rc = get_int(L, cfg, "hidden_size", 1, 0, &hp->n_embd)) ||
	    (rc = get_int(L, cfg, "intermediate_size", 1, 0, &hp->n_ff)) ||
	    (rc = get_int(L, cfg, "num_attention_heads", 1, 0, &hp->n_head)) ||
	    (rc = get_int(L, cfg, "num_key_value_heads", 0, hp->n_head, &hp->n_head_kv)) ||
	    (rc = get_int(L, cfg, "max_position_embeddings", 0, 2048, &hp->n_ctx_train)) ||
	    (rc = get_int(L, cfg, "vocab_size", 1, 0, &hp->n_vocab)) ||
	    (rc = get_int(L, cfg, "head_dim", 0, hp->n_head ? hp->n_embd / hp->n_head : 0, &hp->head_dim)) ||
	    (rc = get_float(L, cfg, "rms_norm_eps", 1e-6f, &hp->rms_eps)))
		return rc;
	/* transformers 5 moved rope_theta into rope_parameters */
	if ((rc = get_float(L, json_object_get(cfg, "rope_theta") || !json_is_object(rp) ? cfg : rp, "rope_theta",
	                    10000.0f, &hp->rope_theta)))
		return rc;
	if (hp->n_vocab < 1 || hp->n_ctx_train < 1)
		return skipper_fail(L->err, SKIPPER_ERR_FORMAT, "%s: %s = %d: must be at least 1", L->path,
		                    hp->n_vocab < 1 ? "vocab_size" : "max_position_embeddings",
		                    hp->n_vocab < 1 ? hp->n_vocab : hp->n_ctx_train);
	hp->rope_dim = hp->head_dim;
	hp->rope_style = SKIPPER_ROPE_HALVES; /* checkpoints rotate halves; only the GGUF converter permutes */

	float partial;
	if ((rc = get_float(L, cfg, "partial_rotary_factor", 1.0f, &partial)))
		return rc;
	if (partial != 1.0f)
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED, "%s: partial_rotary_factor = %g is not supported (1 is)",
		                    L->path, partial);
	if ((act = json_string_value(json_object_get(cfg, "hidden_act"))) && strcmp(act, "silu") != 0)
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED, "%s: hidden_act = \"%.32s\" is not supported (silu is)",
		                    L->path, act);
	if (json_is_true(json_object_get(cfg, "use_sliding_window")))
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: use_sliding_window = true is not supported (every layer attends to the whole context)",
		                    L->path);
	if (!L->arch->qkv_bias && json_is_true(json_object_get(cfg, "attention_bias")))
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED,
		                    "%s: attention_bias = true is not supported for %s (qwen2 has the Q/K/V biases)", L->path,
		                    L->arch->name);
	if (json_is_true(json_object_get(cfg, "mlp_bias")))
		return skipper_fail(L->err, SKIPPER_ERR_UNSUPPORTED, "%s: mlp_bias = true is not supported", L->path);
	return rope_scaling(L, cfg);
}
