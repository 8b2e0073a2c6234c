#include <stdlib.h>
#include <string.h>
#include <stdio.h>
/* A small workload for gperftools: a hot loop and allocations kept live. */
static volatile unsigned long sink;
__attribute__((noinline)) unsigned long spin(unsigned long n) {
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++) x += i * 2654435761u ^ (x >> 3);
	return x;
}
__attribute__((noinline)) char *keep(size_t n) { char *p = malloc(n); memset(p, 1, n); return p; }
int main(void) {
	char *kept[2000];
	for (int i = 0; i < 2000; i++) kept[i] = keep(4096 + i);
	for (int r = 0; r < 40; r++) sink += spin(20000000);
	printf("%lu %p\n", sink, (void *)kept[7]);
	return 0;
}
