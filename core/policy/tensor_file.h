/* Float matrices that go with a profile (knn-router anchors), in the
 * safetensors format. */
#ifndef SKIPPER_TENSOR_FILE_H
#define SKIPPER_TENSOR_FILE_H

#include <stddef.h>

#include "skipper/status.h"

/* F32, shape [rows, cols], little-endian hosts only.
 * Write n tensors atomically; names must be distinct and non-empty. */
int skipper_tensors_write(const char *path, int n, const char *const *names, const float *const *data,
                          const int *rows, const int *cols, struct skipper_error *err);

/* Read tensor name from path: *rows and *cols always set (a 1-D tensor is
 * one row); the data is copied to out when out is non-NULL, which must hold
 * capacity >= rows * cols floats. SKIPPER_ERR_NOT_FOUND if there is no such
 * tensor, SKIPPER_ERR_IO if the file cannot be opened, SKIPPER_ERR_FORMAT
 * for a malformed file. */
int skipper_tensor_read(const char *path, const char *name, float *out, size_t capacity, int *rows, int *cols,
                        struct skipper_error *err);

#endif
