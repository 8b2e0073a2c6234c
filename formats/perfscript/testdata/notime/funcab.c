/* A small CPU-bound program for perf: two functions with known shares
   (func_a does a third of the work, func_b two thirds) and a few page
   faults from touching fresh memory. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long spin(unsigned long n) {
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++) x += i * 2654435761u ^ (x >> 3);
	return x;
}
__attribute__((noinline)) void func_a(void) { sink += spin(10000000); }
__attribute__((noinline)) void func_b(void) { sink += spin(20000000); }

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	for (int r = 0; r < rounds; r++) {
		char *p = malloc(1 << 20);
		memset(p, r, 1 << 20);
		func_a();
		func_b();
		free(p);
	}
	printf("%lu\n", sink);
	return 0;
}
