/* The built-in configuration table: every core key, its type and default.
 * conf/skipper.ini and skipper.ini(5) document exactly these. */
#include <stddef.h>

#include "config_keys.h"

const struct skipper_config_key skipper_config_keys[] = {
	{ "model", "path", "", SKIPPER_KEY_STRING, NULL },
	{ "model", "hub", "", SKIPPER_KEY_STRING, NULL },
	{ "model", "backend", "auto", SKIPPER_KEY_ENUM, "auto,cpu,cuda" },
	{ "model", "quantize", "none", SKIPPER_KEY_ENUM, "none,f16,bf16,q8_0,q4_0,q4_1,q5_0,q5_1,q4_k,q5_k,q6_k" },
	{ "model", "threads", "0", SKIPPER_KEY_INT, NULL, 0, 1024 },
	{ "model", "ctx", "4096", SKIPPER_KEY_INT, NULL, 16, 1 << 20 },
	{ "model", "kv_type", "f16", SKIPPER_KEY_ENUM, "f16,q8_0" },

	{ "generate", "max_tokens", "256", SKIPPER_KEY_INT, NULL, 1, 1 << 20 },
	{ "generate", "temperature", "0", SKIPPER_KEY_DOUBLE, NULL, 0, 100 },
	{ "generate", "top_k", "40", SKIPPER_KEY_INT, NULL, 0, 1 << 20 },
	{ "generate", "top_p", "0.95", SKIPPER_KEY_DOUBLE, NULL, 0, 1 },
	{ "generate", "seed", "0", SKIPPER_KEY_INT, NULL, 0, 0x7fffffff },
	{ "generate", "chat_template", "auto", SKIPPER_KEY_ENUM, "auto,none,chatml,llama2,llama3,mistral,zephyr" },
	{ "generate", "system", "", SKIPPER_KEY_STRING, NULL },
	{ "generate", "draft_vocab", "auto", SKIPPER_KEY_INT, "auto", 0, 1 << 24 },
	{ "generate", "draft_vocab_file", "", SKIPPER_KEY_STRING, NULL },
	{ "generate", "prefix_cache", "yes", SKIPPER_KEY_BOOL, NULL },

	{ "policy", "name", "none", SKIPPER_KEY_STRING, NULL },
	{ "policy", "profile", "", SKIPPER_KEY_STRING, NULL },
	{ "policy", "plugin_dir", "", SKIPPER_KEY_STRING, NULL },
	{ "policy", "lookup", "no", SKIPPER_KEY_BOOL, NULL },
	{ "policy", "guard", "yes", SKIPPER_KEY_BOOL, NULL },

	{ "lookup", "min_ngram", "1", SKIPPER_KEY_INT, NULL, 1, 8 },
	{ "lookup", "max_ngram", "4", SKIPPER_KEY_INT, NULL, 1, 8 },
	{ "lookup", "max_draft", "16", SKIPPER_KEY_INT, NULL, 1, 32 },
	{ "lookup", "branches", "8", SKIPPER_KEY_INT, NULL, 1, 8 },
	{ "lookup", "ngrams", "auto", SKIPPER_KEY_STRING, NULL },
	{ "lookup", "history", "off", SKIPPER_KEY_STRING, NULL },
	{ "lookup", "history_mb", "64", SKIPPER_KEY_INT, NULL, 1, 16384 },
	{ "lookup", "history_scope", "key", SKIPPER_KEY_ENUM, "key,global" },

	{ "hub", "endpoint", "", SKIPPER_KEY_STRING, NULL },
	{ "hub", "cache_dir", "", SKIPPER_KEY_STRING, NULL },
	{ "hub", "token_file", "", SKIPPER_KEY_STRING, NULL },
	{ "hub", "offline", "no", SKIPPER_KEY_BOOL, NULL },
	{ "hub", "trusted_keys", "", SKIPPER_KEY_STRING, NULL },
	{ "hub", "max_file_size", "64G", SKIPPER_KEY_SIZE, NULL },
	{ "hub", "retries", "5", SKIPPER_KEY_INT, NULL, 0, 100 },
	{ "hub", "timeout", "30", SKIPPER_KEY_INT, NULL, 1, 86400 },

	{ "server", "host", "127.0.0.1", SKIPPER_KEY_STRING, NULL },
	{ "server", "port", "8080", SKIPPER_KEY_INT, NULL, 0, 65535 },
	{ "server", "parallel", "4", SKIPPER_KEY_INT, NULL, 1, 256 },
	{ "server", "max_queue", "64", SKIPPER_KEY_INT, NULL, 0, 1 << 20 },
	{ "server", "prefill_chunk", "512", SKIPPER_KEY_INT, NULL, 1, 1 << 20 },
	{ "server", "max_body_bytes", "1M", SKIPPER_KEY_SIZE, NULL },
	{ "server", "max_header_bytes", "16K", SKIPPER_KEY_SIZE, NULL },
	{ "server", "read_timeout", "30", SKIPPER_KEY_INT, NULL, 1, 86400 },
	{ "server", "max_connections", "64", SKIPPER_KEY_INT, NULL, 1, 10000 },
	{ "server", "shutdown_timeout", "30", SKIPPER_KEY_INT, NULL, 0, 86400 },
	{ "server", "access_log", "", SKIPPER_KEY_STRING, NULL },
	{ "server", "api_key_file", "", SKIPPER_KEY_STRING, NULL },
	{ "server", "model_name", "", SKIPPER_KEY_STRING, NULL },
	{ NULL, NULL, NULL, 0, NULL },
};
