/* Hugging Face checkpoints: a directory with config.json and
 * model.safetensors, or shards named by model.safetensors.index.json.
 * config.json gives the hyper-parameters (hf_config.c); each tensor is
 * renamed to its GGUF name and bound by model.c as a GGUF one is. The
 * matrices stay in the mappings (F32, F16, BF16); norms and biases are
 * converted to f32 once, as llama.cpp's converter stores them. Unlike that
 * converter nothing permutes llama's Q/K rows: the checkpoint's RoPE
 * rotates halves, and the view says so. */
#define _GNU_SOURCE /* asprintf */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "model_impl.h"
#include "quant.h"
#include "safetensors.h"

struct skipper_hf {
	char *dir;
	struct shard {
		char *name;                  /* as the index names it (or "model.safetensors") */
		struct skipper_safetensors *st;
	} *files;
	int n_files;
	struct skipper_gguf_tensor *t;   /* every tensor the model uses, GGUF-named */
	char **names;                    /* their owned names */
	int64_t n;
};

json_t *skipper_hf_json_file(const char *path, struct skipper_error *err)
{
	const void *data;
	size_t len;
	json_error_t je;

	/* far above any real one: a 150K-token tokenizer.json is ~7 MB */
	if (skipper_map_file(path, (uint64_t)256 << 20, NULL, &data, &len, err))
		return NULL;
	json_t *j = json_loadb(data, len, 0, &je);
	skipper_unmap_file(data, len);
	if (!j)
		skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: line %d, column %d: %s", path, je.line, je.column, je.text);
	else if (!json_is_object(j)) {
		json_decref(j);
		j = NULL;
		skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: not a JSON object", path);
	}
	return j;
}

/* HF tensor names -> GGUF's. Per layer: "model.layers.N." + the left. */
static const struct { const char *hf, *gguf; } layer_names[] = {
	{ "input_layernorm.weight", "attn_norm.weight" },
	{ "self_attn.q_proj.weight", "attn_q.weight" },
	{ "self_attn.k_proj.weight", "attn_k.weight" },
	{ "self_attn.v_proj.weight", "attn_v.weight" },
	{ "self_attn.o_proj.weight", "attn_output.weight" },
	{ "self_attn.q_proj.bias", "attn_q.bias" },
	{ "self_attn.k_proj.bias", "attn_k.bias" },
	{ "self_attn.v_proj.bias", "attn_v.bias" },
	{ "self_attn.q_norm.weight", "attn_q_norm.weight" },
	{ "self_attn.k_norm.weight", "attn_k_norm.weight" },
	{ "post_attention_layernorm.weight", "ffn_norm.weight" },
	{ "mlp.gate_proj.weight", "ffn_gate.weight" },
	{ "mlp.up_proj.weight", "ffn_up.weight" },
	{ "mlp.down_proj.weight", "ffn_down.weight" },
}, top_names[] = {
	{ "model.embed_tokens.weight", "token_embd.weight" },
	{ "model.norm.weight", "output_norm.weight" },
	{ "lm_head.weight", "output.weight" },
};

/* The GGUF name of an HF tensor into out; 1 for a tensor models carry but
 * nothing computes with (old checkpoints' rotary inv_freq buffers), -1 for
 * a name this loader does not know. */
static int gguf_name(const char *hf, int n_layer, char *out, size_t cap)
{
	int layer, used = 0;

	for (size_t i = 0; i < sizeof top_names / sizeof top_names[0]; i++)
		if (strcmp(hf, top_names[i].hf) == 0) {
			snprintf(out, cap, "%s", top_names[i].gguf);
			return 0;
		}
	if (sscanf(hf, "model.layers.%d.%n", &layer, &used) != 1 || !used || layer < 0 || layer >= n_layer ||
	    hf[strlen("model.layers.")] < '0' || hf[strlen("model.layers.")] > '9')
		return -1;
	if (strcmp(hf + used, "self_attn.rotary_emb.inv_freq") == 0)
		return 1;
	for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++)
		if (strcmp(hf + used, layer_names[i].hf) == 0) {
			snprintf(out, cap, "blk.%d.%s", layer, layer_names[i].gguf);
			return 0;
		}
	return -1;
}

static const struct skipper_gguf_tensor *hf_find(const void *ctx, const char *name)
{
	const struct skipper_hf *hf = ctx;
	for (int64_t i = 0; i < hf->n; i++)
		if (strcmp(hf->t[i].name.ptr, name) == 0)
			return &hf->t[i];
	return NULL;
}

static const struct skipper_gguf_tensor *hf_at(const void *ctx, int64_t i)
{
	const struct skipper_hf *hf = ctx;
	return i >= 0 && i < hf->n ? &hf->t[i] : NULL;
}

/* GGUF name -> the checkpoint's, for messages. */
static const char *hf_name(const char *g, char *buf, size_t cap)
{
	int layer, used = 0;
	for (size_t i = 0; i < sizeof top_names / sizeof top_names[0]; i++)
		if (strcmp(g, top_names[i].gguf) == 0)
			return top_names[i].hf;
	if (sscanf(g, "blk.%d.%n", &layer, &used) == 1 && used)
		for (size_t i = 0; i < sizeof layer_names / sizeof layer_names[0]; i++)
			if (strcmp(g + used, layer_names[i].gguf) == 0) {
				snprintf(buf, cap, "model.layers.%d.%s", layer, layer_names[i].hf);
				return buf;
			}
	return g;
}

struct tensor_src model_hf_tensors(const struct skipper_hf *hf)
{
	return (struct tensor_src){ hf, hf_find, hf_at, hf->n, hf_name };
}

/* A shard's name from the index: a plain file beside it. */
static int shard_name_ok(const char *f)
{
	size_t n = strlen(f);
	return n > 12 && n < 256 && f[0] != '.' && !strchr(f, '/') && !strcmp(f + n - 12, ".safetensors");
}

static struct shard *find_file(const struct skipper_hf *hf, const char *name)
{
	for (int i = 0; i < hf->n_files; i++)
		if (strcmp(hf->files[i].name, name) == 0)
			return &hf->files[i];
	return NULL;
}

static int open_file(struct skipper_hf *hf, const char *name, struct skipper_error *err)
{
	struct shard *f;
	char *path;
	int rc;

	if (find_file(hf, name))
		return SKIPPER_OK;
	if (!(f = realloc(hf->files, sizeof *f * (size_t)(hf->n_files + 1))))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	hf->files = f;
	f += hf->n_files;
	if (asprintf(&path, "%s/%s", hf->dir, name) < 0)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (!(f->name = strdup(name)))
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	else if ((rc = skipper_safetensors_open(path, &f->st, err)))
		free(f->name);
	else
		hf->n_files++;
	free(path);
	return rc;
}

/* The weight files: the index's shards (each tensor it names checked to be
 * in its shard), else model.safetensors. */
static int open_weights(struct skipper_hf *hf, struct skipper_error *err)
{
	char *path;
	int rc = SKIPPER_OK;

	if (asprintf(&path, "%s/model.safetensors.index.json", hf->dir) < 0)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (access(path, F_OK) != 0) {
		free(path);
		if (asprintf(&path, "%s/model.safetensors", hf->dir) < 0)
			return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		if (access(path, F_OK) != 0)
			rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND,
			                  "%s: neither model.safetensors nor model.safetensors.index.json is there", hf->dir);
		else
			rc = open_file(hf, "model.safetensors", err);
		free(path);
		return rc;
	}
	json_t *idx = skipper_hf_json_file(path, err), *map = idx ? json_object_get(idx, "weight_map") : NULL, *v;
	const char *tensor;
	if (!idx) {
		free(path);
		return err->status;
	}
	if (!json_is_object(map) || !json_object_size(map)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: no \"weight_map\" object naming the shards", path);
		goto out;
	}
	json_object_foreach(map, tensor, v) {
		const char *f = json_string_value(v);
		if (!f || !shard_name_ok(f)) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT,
			                  "%s: weight_map[\"%.64s\"]: expected the name of a .safetensors file beside it", path,
			                  tensor);
			goto out;
		}
		if ((rc = open_file(hf, f, err)))
			goto out;
	}
	json_object_foreach(map, tensor, v) {
		const struct skipper_safetensors *st = find_file(hf, json_string_value(v))->st; /* opened above */
		int found = 0;
		for (int64_t i = 0; !found && i < skipper_safetensors_n_tensors(st); i++)
			found = strcmp(skipper_safetensors_tensor(st, i)->name.ptr, tensor) == 0;
		if (!found) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%.64s' is not in %s, where the index puts it",
			                  path, tensor, json_string_value(v));
			goto out;
		}
	}
out:
	json_decref(idx);
	free(path);
	return rc;
}

/* A 1-D tensor (norm, bias) as f32 in storage m owns, as llama.cpp's
 * converter writes them and the loader binds them. */
static int to_f32(struct skipper_model *m, struct skipper_gguf_tensor *t, struct skipper_error *err)
{
	float *f;
	if (t->type == SKIPPER_F32 || t->n_dims != 1)
		return SKIPPER_OK;
	if (!(f = model_alloc(m, (size_t)t->ne[0] * sizeof *f)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	skipper_dequant_row(t->type, t->data, f, t->ne[0]);
	t->type = SKIPPER_F32;
	t->data = f;
	t->nbytes = (uint64_t)t->ne[0] * sizeof *f;
	return SKIPPER_OK;
}

/* Every tensor of every file under its GGUF name: unknown names and a
 * tensor in two files refused. */
static int collect(struct skipper_model *m, struct skipper_error *err)
{
	struct skipper_hf *hf = m->hf;
	int64_t total = 0;
	char name[128];
	int rc;

	for (int i = 0; i < hf->n_files; i++)
		total += skipper_safetensors_n_tensors(hf->files[i].st);
	if (!(hf->t = calloc((size_t)(total ? total : 1), sizeof *hf->t)) ||
	    !(hf->names = calloc((size_t)(total ? total : 1), sizeof *hf->names)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (int i = 0; i < hf->n_files; i++) {
		const struct skipper_safetensors *st = hf->files[i].st;
		for (int64_t k = 0; k < skipper_safetensors_n_tensors(st); k++) {
			const struct skipper_gguf_tensor *src = skipper_safetensors_tensor(st, k);
			int kind = gguf_name(src->name.ptr, m->view.hp.n_layer, name, sizeof name);
			if (kind == 1)
				continue;
			if (kind < 0)
				return skipper_fail(err, SKIPPER_ERR_FORMAT,
				                    "%s: tensor '%.96s' is not one a %s model has (a different architecture?)",
				                    skipper_safetensors_path(st), src->name.ptr, m->view.arch);
			if (hf_find(hf, name))
				return skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tensor '%.96s' is in another file too",
				                    skipper_safetensors_path(st), src->name.ptr);
			if (!(hf->names[hf->n] = strdup(name)))
				return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
			hf->t[hf->n] = *src;
			hf->t[hf->n].name.ptr = hf->names[hf->n];
			hf->t[hf->n].name.len = strlen(name);
			if ((rc = to_f32(m, &hf->t[hf->n], err)))
				return rc;
			hf->n++;
		}
	}
	return SKIPPER_OK;
}

/* "ORG/NAME" for a snapshot in the hub cache (.../models--ORG--NAME/
 * snapshots/REV), else the directory's own name. */
static void model_name(const char *dir, char *out, size_t cap)
{
	const char *snap = strstr(dir, "/snapshots/"), *base = strrchr(dir, '/');
	const char *repo = NULL;
	for (const char *p = strstr(dir, "models--"); p && p < snap; p = strstr(p + 1, "models--"))
		repo = p + 8;
	if (repo && snap) {
		snprintf(out, cap, "%.*s", (int)(snap - repo), repo);
		char *sep = strstr(out, "--");
		if (sep) {
			*sep = '/';
			memmove(sep + 1, sep + 2, strlen(sep + 2) + 1);
		}
	} else {
		snprintf(out, cap, "%s", base && base[1] ? base + 1 : dir);
	}
	skipper_printable(out);
}

int model_load_hf(struct skipper_model *m, const char *dir, struct skipper_error *err)
{
	char *cfg_path = NULL;
	json_t *cfg = NULL;
	int rc;

	if (!(m->hf = calloc(1, sizeof *m->hf)) || !(m->hf->dir = strdup(dir)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (size_t n = strlen(m->hf->dir); n > 1 && m->hf->dir[n - 1] == '/'; n--)
		m->hf->dir[n - 1] = '\0';
	if (asprintf(&cfg_path, "%s/config.json", m->hf->dir) < 0)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (access(cfg_path, F_OK) != 0) {
		rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND,
		                  "%s: a directory without config.json (a model is a GGUF file or a Hugging Face "
		                  "checkpoint directory)", m->hf->dir);
		goto out;
	}
	struct loader L = { NULL, m, model_hf_tensors(m->hf), cfg_path, err };
	if (!(cfg = skipper_hf_json_file(cfg_path, err))) {
		rc = err->status;
		goto out;
	}
	if ((rc = model_hf_config(&L, cfg)) || (rc = model_check_hparams(&L)) || (rc = open_weights(m->hf, err)) ||
	    (rc = collect(m, err)))
		goto out;
	L.path = m->hf->dir; /* the tensors' messages name the checkpoint */
	L.src = model_hf_tensors(m->hf);
	if (!json_is_true(json_object_get(cfg, "tie_word_embeddings")) && json_object_get(cfg, "tie_word_embeddings") &&
	    !hf_find(m->hf, "output.weight")) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: tie_word_embeddings is false, but no file has lm_head.weight",
		                  cfg_path);
		goto out;
	}
	model_name(m->hf->dir, m->view.name, sizeof m->view.name);
	m->view.path = m->hf->dir;
	rc = model_bind_tensors(&L);
out:
	json_decref(cfg);
	free(cfg_path);
	return rc;
}

void model_free_hf(struct skipper_hf *hf)
{
	if (!hf)
		return;
	for (int i = 0; i < hf->n_files; i++) {
		skipper_safetensors_close(hf->files[i].st);
		free(hf->files[i].name);
	}
	for (int64_t i = 0; i < hf->n; i++)
		free(hf->names[i]);
	free(hf->names);
	free(hf->t);
	free(hf->files);
	free(hf->dir);
	free(hf);
}

void model_release_hf(const struct skipper_hf *hf, const void *p, uint64_t n)
{
	for (int i = 0; hf && i < hf->n_files; i++)
		skipper_safetensors_release(hf->files[i].st, p, n);
}

uint64_t model_hf_size(const struct skipper_hf *hf)
{
	uint64_t n = 0;
	for (int i = 0; i < hf->n_files; i++)
		n += skipper_safetensors_size(hf->files[i].st);
	return n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int model_hf_sha256(const struct skipper_hf *hf, char out[65], struct skipper_error *err)
{
	/* "config.json HASH\nFILE HASH\n..." in name order, hashed: the same
	 * files give the same hash wherever they lie */
	char **sorted = malloc(sizeof *sorted * (size_t)(hf->n_files + 1)), *text = NULL, *path, hex[65];
	size_t len = 0;
	int rc = SKIPPER_OK;

	if (!sorted)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	sorted[0] = "config.json";
	for (int i = 0; i < hf->n_files; i++)
		sorted[i + 1] = hf->files[i].name;
	qsort(sorted + 1, (size_t)hf->n_files, sizeof *sorted, by_name);
	for (int i = 0; i <= hf->n_files && !rc; i++) {
		if (asprintf(&path, "%s/%s", hf->dir, sorted[i]) < 0)
			rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		else {
			if (!(rc = skipper_sha256_file(path, hex, err))) {
				char *t = realloc(text, len + strlen(sorted[i]) + 67);
				if (!t)
					rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
				else
					len += (size_t)sprintf((text = t) + len, "%s %s\n", sorted[i], hex);
			}
			free(path);
		}
	}
	unsigned char md[32];
	if (!rc && skipper_sha256(text, len, NULL, 0, md))
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	if (!rc)
		skipper_hex(md, 32, out);
	free(text);
	free(sorted);
	return rc;
}

char *skipper_model_hf_file(const struct skipper_model *m, const char *name)
{
	char *path;
	if (!m->hf || asprintf(&path, "%s/%s", m->hf->dir, name) < 0)
		return NULL;
	if (access(path, R_OK) == 0)
		return path;
	free(path);
	return NULL;
}

int skipper_model_hf_eos(const struct skipper_model *m, int32_t *ids, int max)
{
	char *path = skipper_model_hf_file(m, "generation_config.json");
	struct skipper_error err = { 0 };
	json_t *g = path ? skipper_hf_json_file(path, &err) : NULL, *e = g ? json_object_get(g, "eos_token_id") : NULL;
	int n = 0;

	free(path);
	if (json_is_integer(e) && max > 0)
		ids[n++] = (int32_t)json_integer_value(e);
	for (size_t i = 0; json_is_array(e) && i < json_array_size(e) && n < max; i++)
		if (json_is_integer(json_array_get(e, i)))
			ids[n++] = (int32_t)json_integer_value(json_array_get(e, i));
	json_decref(g);
	return n;
}
