package frames

import "github.com/perfdoctor/perfdoctor/evidence"

// NativeLibrary is a family of native code that perf names by its symbols,
// or by its library file when stripped. When no function of the program
// above it is named (a stripped binary, no frame pointers), the hot
// function rule names the library with the family's own prescription,
// rather than an unnamed frame.
type NativeLibrary struct {
	Name  string
	Match evidence.Matcher
	Fix   string
}

// NativeLibraries are the families, compression excepted (the compression
// rule reads it).
var NativeLibraries = []NativeLibrary{
	{
		Name: "OpenSSL/BoringSSL (TLS and crypto)",
		Match: evidence.Any(inLibrary("libcrypto.so"), inLibrary("libssl.so"), evidence.FuncPrefix(
			"EVP_", "SSL_", "ssl3_", "tls1_", "tls13_", "aesni_", "aes_gcm_", "gcm_", "sha1_block", "sha256_block", "sha512_block",
			"ecp_nistz256", "BN_", "bn_", "RSA_", "rsa_", "ossl_", "ChaCha20", "chacha20_", "Poly1305", "poly1305_", "x25519", "X25519")),
		Fix: "Make TLS handshakes rare: keep connections alive and resume sessions (session tickets or a session cache), " +
			"prefer ECDSA P-256 certificates to RSA (a handshake costs a fraction), keep AES-GCM on CPUs with AES-NI, " +
			"and terminate TLS once rather than on every hop.",
	},
	{
		Name: "memory copy and allocation (memcpy, malloc)",
		Match: evidence.Any(inLibrary("libjemalloc.so"), inLibrary("libtcmalloc"), inLibrary("libmimalloc.so"), exact(
			"memcpy", "memmove", "memset", "malloc", "free", "calloc", "realloc", "cfree", "_int_malloc", "_int_free",
			"malloc_consolidate", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc"),
			evidence.FuncPrefix("__memmove_", "__memcpy_", "__memset_", "je_", "tc_", "mi_")),
		Fix: "Copy less and allocate less per request: pass buffers by reference, use writev/sendfile instead of " +
			"assembling copies, reuse buffers and allocate from per-request arenas; where threads contend in malloc, " +
			"a scalable allocator (jemalloc, tcmalloc, mimalloc) helps.",
	},
	{
		Name:  "PCRE regular expressions",
		Match: evidence.Any(inLibrary("libpcre"), evidence.FuncPrefix("pcre2_", "pcre_", "_pcre2_", "_pcre_")),
		Fix: "Compile each pattern once at start-up, never per request; enable the JIT (pcre2_jit_compile; nginx " +
			"pcre_jit on); anchor patterns and remove nested quantifiers that backtrack.",
	},
	{
		Name: "serialization (protobuf, JSON, XML, YAML libraries)",
		Match: evidence.Any(inLibrary("libprotobuf"), inLibrary("libjson-c.so"), inLibrary("libjansson.so"), inLibrary("libxml2.so"),
			inLibrary("libyaml"), evidence.FuncPrefix("google::protobuf::", "json_object_", "json_tokener_", "xmlParse", "xmlSAX", "yaml_parser_")),
		Fix: "Serialize less: cache the encoded form of data that rarely changes, do not decode and re-encode between " +
			"layers, use protobuf arenas in C++, and a faster parser where JSON dominates (simdjson, RapidJSON).",
	},
}

func exact(names ...string) evidence.Matcher {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(fn string) bool { return set[fn] }
}
