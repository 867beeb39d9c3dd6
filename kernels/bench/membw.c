/* Device-to-device copy bandwidth: the HBM roofline the decode benchmark is
 * measured against. Usage: membw [GiB per buffer, default 2] [repeats, 20].
 * Copies one buffer into another with cudaMemcpy, timed with CUDA events
 * after warm-up copies, and prints
 *   membw_bytes_per_s=B   (bytes read + bytes written per second)
 * Read + written is what the memory moves, so B is the rate at which a
 * kernel that only streams weights in can at best read them: the roofline
 * of one decode step is weight bytes / B. Plain C on the CUDA runtime API,
 * so it builds with the C compiler and links libcudart. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "membw: %s: %s\n", #x, cudaGetErrorString(e_));            \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	double gib = argc > 1 ? atof(argv[1]) : 2.0;
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	size_t n = (size_t)(gib * (1u << 30));
	void *a, *b;
	cudaEvent_t t0, t1;
	float ms = 0;
	struct cudaDeviceProp prop;

	if (gib < 1.0 || reps < 1) {
		fprintf(stderr, "usage: membw [GiB >= 1] [repeats >= 1]\n");
		return 2;
	}
	CHECK(cudaGetDeviceProperties(&prop, 0));
	CHECK(cudaMalloc(&a, n));
	CHECK(cudaMalloc(&b, n));
	CHECK(cudaMemset(a, 1, n));
	CHECK(cudaMemset(b, 0, n));
	CHECK(cudaEventCreate(&t0));
	CHECK(cudaEventCreate(&t1));
	for (int i = 0; i < 3; i++) /* clocks up, pages touched */
		CHECK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
	CHECK(cudaEventRecord(t0, 0));
	for (int i = 0; i < reps; i++)
		CHECK(cudaMemcpy(i % 2 ? a : b, i % 2 ? b : a, n, cudaMemcpyDeviceToDevice));
	CHECK(cudaEventRecord(t1, 0));
	CHECK(cudaEventSynchronize(t1));
	CHECK(cudaEventElapsedTime(&ms, t0, t1));
	double bps = 2.0 * (double)n * reps / (ms * 1e-3);
	printf("device=%s\n", prop.name);
	printf("membw_copy_bytes=%zu repeats=%d ms=%.3f\n", n, reps, ms);
	printf("membw_bytes_per_s=%.6g\n", bps);
	cudaFree(a);
	cudaFree(b);
	return 0;
}
