/* The CUDA backend module stays loaded once dlopen()ed, even when its probe
 * finds no device (core/backend/backend.c): the CUDA runtime and cuBLAS it
 * links allocate at load time and never free, so unloading them would leave
 * blocks LeakSanitizer reports from "<unknown module>". Checked with a
 * stand-in module that does the same (tests/plugins/fake-backend.c,
 * NO_DEVICE) on every machine, and with the real module where this build
 * has one. Under --enable-sanitizers the leak check at exit is a second
 * witness: an unloaded stand-in leaks its block. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/error.h"
#include "model/model.h"
#include "tap.h"
#include "testmodel.h"

static int resident(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

/* Try kind cuda through the module in dir; its status. */
static int try_cuda(const struct skipper_model_view *m, const char *dir, struct skipper_error *err)
{
	struct skipper_backend_opts o = { .n_ctx = 64, .n_threads = 1, .kind = SKIPPER_BACKEND_CUDA };
	struct skipper_backend *be = NULL;
	setenv("SKIPPER_PLUGIN_PATH", dir, 1);
	memset(err, 0, sizeof *err);
	int rc = skipper_backend_create(m, &o, &be, err);
	if (rc == 0)
		be->ops->destroy(be);
	return rc;
}

int main(void)
{
	const char *b = getenv("top_builddir");
	char tmp[] = "/tmp/t-backend-module.XXXXXX", model[4096], fake[4096], link[4096], real[4096];
	struct skipper_test_model_opts mo;
	struct skipper_model *m = NULL;
	struct skipper_error err;

	if (!b)
		b = ".";
	if (!mkdtemp(tmp))
		BAIL("mkdtemp");
	snprintf(model, sizeof model, "%s/m.gguf", tmp);
	skipper_test_model_defaults(&mo);
	mo.n_layer = 1;
	if (skipper_test_model_write(model, &mo) || skipper_model_load(model, &m, &err))
		BAIL("cannot make the test model");

	/* the stand-in, installed under the real module's name */
	snprintf(fake, sizeof fake, "%s/tests/plugins/.libs/fake-nodev-backend.so", b);
	snprintf(link, sizeof link, "%s/skipper-backend-cuda.so", tmp);
	if (access(fake, R_OK) != 0 || symlink(fake, link) != 0)
		BAIL("tests/plugins/fake-nodev-backend.so not built");
	ok(!resident(link), "stand-in module not loaded before the first try");
	int rc = try_cuda(&m->view, tmp, &err);
	ok(rc == SKIPPER_ERR_UNSUPPORTED && strstr(err.msg, "no CUDA device (fake module)"),
	   "no device: SKIPPER_ERR_UNSUPPORTED with the module's reason (%s)", err.msg);
	ok(resident(link), "the module stays loaded after its probe found no device");
	rc = try_cuda(&m->view, tmp, &err);
	ok(rc == SKIPPER_ERR_UNSUPPORTED && resident(link), "a second try: same answer, still one module");

	/* the real module, where this build has one */
	snprintf(real, sizeof real, "%s/.libs/skipper-backend-cuda.so", b);
	if (access(real, R_OK) == 0) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/.libs", b);
		rc = try_cuda(&m->view, dir, &err);
		ok(rc == 0 || rc == SKIPPER_ERR_UNSUPPORTED, "real module: %s", rc ? err.msg : "backend created");
		ok(resident(real), "real module: stays loaded after %s", rc ? "finding no device" : "use");
	} else {
		tap_skip(2, "this build has no CUDA module");
	}

	skipper_model_free(m);
	unlink(link);
	unlink(model);
	rmdir(tmp);
	return tap_done();
}
