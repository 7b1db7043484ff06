// Host build of kernels_dequant.cu's dequantization, for kernels_test.go: reads one
// row of the named type from stdin and writes its k values as float32.
// usage: dequant_host TYPE K < row > values
#define TROUPE_HOST
#include "../kernels_dequant.cu"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

int main(int argc, char** argv) {
	if (argc != 3) return 2;
	int k = atoi(argv[2]);
	std::vector<u8> row(1 << 24);
	size_t n = fread(row.data(), 1, row.size(), stdin);
	(void)n;
	void (*dq)(const u8*, int, float*) = nullptr;
	struct { const char* name; void (*f)(const u8*, int, float*); } fns[] = {
		{"F32", dq_f32}, {"F16", dq_f16}, {"BF16", dq_bf16}, {"Q4_0", dq_q4_0}, {"Q4_1", dq_q4_1},
		{"Q5_0", dq_q5_0}, {"Q5_1", dq_q5_1}, {"Q8_0", dq_q8_0}, {"Q2_K", dq_q2_k}, {"Q3_K", dq_q3_k},
		{"Q4_K", dq_q4_k}, {"Q5_K", dq_q5_k}, {"Q6_K", dq_q6_k},
	};
	for (auto& f : fns)
		if (strcmp(f.name, argv[1]) == 0) dq = f.f;
	if (!dq) return 3;
	std::vector<float> out(k);
	for (int g = 0; g < k / 32; g++) dq(row.data(), g, out.data() + g * 32);
	fwrite(out.data(), 4, k, stdout);
	return 0;
}
