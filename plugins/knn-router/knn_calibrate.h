/* knn-router's calibrate hook (knn_calibrate.c). */
#ifndef KNN_CALIBRATE_H
#define KNN_CALIBRATE_H

#include "skipper/policy.h"

int knn_calibrate(void *state, const struct skipper_calibrate *c);

#endif
