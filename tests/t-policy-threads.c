/* The thread model: two threads, each creating its own instance of one
 * plugin and calling its hooks through the host's wrappers at the same
 * time. A plugin declaring SKIPPER_THREAD_MODEL_SERIALIZE_ALL must see one
 * call at a time (tests/plugins/threads.c fails its hooks otherwise); the
 * same plugin under the default model is the control: there the calls do
 * meet, so the check would see a host that did not serialise them. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "policy/policy_host.h"
#include "tap.h"

#define ROUNDS 100

struct worker {
	struct skipper_policy_lib *lib;
	pthread_barrier_t *start;
	int until_error; /* the control: run until a hook fails (or 5 s) */
	int rounds, failed;
	char msg[SKIPPER_ERROR_MAX];
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const struct skipper_policy_env env = { .n_layer = 4, .n_vocab = 10 };

/* One round of hooks; nonzero once one failed. */
static int round_of_hooks(struct skipper_policy_instance *inst, struct skipper_error *err)
{
	uint8_t a[4], m[4];
	struct skipper_plan plan = { .n_layer = 4, .skip_attn = a, .skip_mlp = m, .max_draft = 4 };
	struct skipper_step step = { .index = 0, .top_k = 1 };
	struct skipper_verdict v = { .n_drafted = 1, .n_accepted = 1 };
	int stop;
	return skipper_policy_select_draft(inst, &plan, err) || skipper_policy_should_exit(inst, &step, &stop, err) ||
	       skipper_policy_on_accept(inst, &v, err);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct skipper_policy_instance *inst;
	struct skipper_error err = { 0 };
	double t0;

	pthread_barrier_wait(w->start);
	t0 = now();
	if (skipper_policy_instance_new(w->lib, &env, NULL, &inst, &err)) {
		w->failed = 1;
	} else {
		while (!w->failed && (w->until_error ? now() - t0 < 5.0 : w->rounds < ROUNDS)) {
			w->failed = round_of_hooks(inst, &err) != 0;
			w->rounds++;
		}
		skipper_policy_instance_free(inst);
	}
	snprintf(w->msg, sizeof w->msg, "%s", err.msg);
	return NULL;
}

/* Two workers on one library; then, from this thread, one more round that
 * fails if any call (destroy included) met another. Returns the failures. */
static int run(const char *path, int until_error, int *rounds, char *msg)
{
	struct skipper_policy_lib *lib;
	struct skipper_policy_instance *inst;
	struct skipper_error err = { 0 };
	pthread_barrier_t start;
	pthread_t th[2];
	struct worker w[2];
	int failed = 0;

	if (skipper_policy_load_file(path, &lib, &err)) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct worker){ .lib = lib, .start = &start, .until_error = until_error };
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	*msg = '\0';
	*rounds = 0;
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
		*rounds += w[i].rounds;
		if (w[i].failed && !*msg)
			strcpy(msg, w[i].msg);
	}
	pthread_barrier_destroy(&start);
	if (skipper_policy_instance_new(lib, &env, NULL, &inst, &err) || round_of_hooks(inst, &err)) {
		failed++;
		if (!*msg)
			strcpy(msg, err.msg);
	} else {
		skipper_policy_instance_free(inst);
	}
	skipper_policy_unload(lib);
	return failed;
}

int main(int argc, char **argv)
{
	char serial[1024], parallel[1024], msg[SKIPPER_ERROR_MAX];
	const char *dir = getenv("top_builddir");
	struct skipper_policy_lib *lib;
	struct skipper_error err = { 0 };
	int rounds, failed;

	snprintf(serial, sizeof serial, "%s/tests/plugins/.libs/threads-serial.so", dir ? dir : ".");
	snprintf(parallel, sizeof parallel, "%s/tests/plugins/.libs/threads-parallel.so", dir ? dir : ".");

	if (skipper_policy_load_file(serial, &lib, &err) == SKIPPER_OK) {
		ok(skipper_policy_lib_desc(lib)->thread_model == SKIPPER_THREAD_MODEL_SERIALIZE_ALL,
		   "the descriptor's thread model reaches the host");
		skipper_policy_unload(lib);
	} else {
		ok(0, "load %s: %s", serial, err.msg);
	}

	failed = run(serial, 0, &rounds, msg);
	ok(failed == 0, "serialised: %d rounds of hooks from two threads, never two calls at once", rounds);
	if (failed)
		diag("%s", msg);
	ok(rounds == 2 * ROUNDS, "serialised: every round ran");

	failed = run(parallel, 1, &rounds, msg);
	ok(failed > 0, "control, parallel instances: the calls meet (after %d rounds)", rounds);
	ok(strstr(msg, "found another one inside the plugin") != NULL, "control: the plugin's message (%s)", msg);
	return tap_done();
}
