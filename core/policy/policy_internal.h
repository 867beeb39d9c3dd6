/* What the three parts of the policy host share: the loaded library, the
 * instance, and the host-services table instances copy. Internal to
 * core/policy/. */
#ifndef SKIPPER_POLICY_INTERNAL_H
#define SKIPPER_POLICY_INTERNAL_H

#include <pthread.h>

#include "policy_host.h"

#define SKIPPER_TRUSTED_KEYS_MAX 32

struct skipper_policy_lib {
	void *handle; /* NULL for built-ins */
	char *path;
	struct skipper_policy desc;
	int refs;     /* loads of this file not yet unloaded (policy_loader.c) */
	struct skipper_policy_lib *next; /* the loaded files' list */
	/* SKIPPER_THREAD_MODEL_SERIALIZE_ALL: every call into the plugin holds
	 * lock (policy_instance.c) */
	int serialize;
	pthread_mutex_t lock;
};

struct skipper_policy_instance {
	struct skipper_policy_lib *lib;
	const struct skipper_policy_env *env;
	struct skipper_host host; /* per instance: it carries the model facts */
	void *state;
	int created;
	struct skipper_needs needs;
	double seconds;
	char msg[SKIPPER_ERROR_MAX];
	int msg_set;
	char *found_profile; /* what env->find_profile gave, asked once */
	int searched;
	/* [hub] trusted_keys: with keys, every profile and tensor file a policy
	 * reads must carry a NAME.sig that verifies with one of them (local
	 * files too: a user who sets the keys expects them to hold), except
	 * while it calibrates (it reads what it writes itself, unsigned) */
	char *keys_buf;
	const char *keys[SKIPPER_TRUSTED_KEYS_MAX];
	size_t n_keys;
	int calibrating;
};

/* The files a policy reads must verify (see keys above): SKIPPER_OK, or
 * the reason in err. */
int skipper_policy_trusted(const struct skipper_policy_instance *inst, const char *path, struct skipper_error *err);

/* The host-services table (policy_services.c); each instance copies it and
 * fills in the model facts. Every service's ctx is the instance. */
extern const struct skipper_host skipper_policy_host_template;

/* Monotonic clock in seconds (host->now and hook timing). */
double skipper_policy_now(void);

#endif
