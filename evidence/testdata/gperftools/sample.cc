// A small workload for tcmalloc's own profiles (gperftools, Debian's
// libgoogle-perftools-dev): the heap sample of what is live and the stacks
// that grew the heap, as servers serve them on /pprof/heap and
// /pprof/growth. keep_big holds most of the live memory.
#include <gperftools/malloc_extension.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<char *> kept;

__attribute__((noinline)) void keep_small(int n) {
	for (int i = 0; i < n; i++) {
		char *p = static_cast<char *>(malloc(256));
		memset(p, i, 256);
		kept.push_back(p);
	}
}

__attribute__((noinline)) void keep_big(int n) {
	for (int i = 0; i < n; i++) {
		char *p = static_cast<char *>(malloc(1 << 20));
		memset(p, i, 1 << 20);
		kept.push_back(p);
	}
}

static void write(const char *path, const std::string &s) {
	FILE *f = fopen(path, "w");
	if (!f || fwrite(s.data(), 1, s.size(), f) != s.size() || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s HEAP_SAMPLE GROWTH\n", argv[0]);
		return 2;
	}
	keep_small(4000);
	keep_big(64);
	std::string heap, growth;
	MallocExtension::instance()->GetHeapSample(&heap);
	MallocExtension::instance()->GetHeapGrowthStacks(&growth);
	write(argv[1], heap);
	write(argv[2], growth);
	return 0;
}
