package cpu002

import (
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
)

// kind is what makes a family's work redundant, which decides its fix.
type kind int

const (
	// setup is a library call meant to be made once: parsing a template,
	// building a router, a validator or a TLS configuration.
	setup kind = iota
	// kdf is a password hash, slow by design, recomputed for credentials
	// that come again with every request.
	kdf
	// gather is a whole collection gathered, sorted or walked for every
	// request when the request touches a part of it.
	gather
)

// family is one kind of redone work, recognised by its frames.
type family struct {
	kind kind
	name string // what the work is: "html/template parsing", "PBKDF2"
	// frames are the family's functions; a sample is the family's when
	// one of them is on its stack (the outermost family wins).
	frames evidence.Matcher
	// job are frames under which the work is the unit's own job, not
	// redone: a metrics scrape gathers the registry by definition.
	job evidence.Matcher
	// generic marks families matched by shape (sorting, iterating a
	// collection) rather than by a library call that names the work:
	// they need a larger share to stand out from ordinary code.
	generic bool
}

var families = []family{
	// Templates: Parse builds the tree, html/template escapes it on the
	// first Execute; both are meant to happen once per template.
	{kind: setup, name: "template parsing", frames: evidence.FuncPrefix(
		"text/template.(*Template).Parse", "text/template.ParseFiles", "text/template.ParseGlob", "text/template.ParseFS",
		"text/template.(*Template).ParseFiles", "text/template.(*Template).ParseGlob", "text/template.(*Template).ParseFS",
		"text/template/parse.Parse", "text/template/parse.(*Tree).Parse",
		"html/template.(*Template).Parse", "html/template.ParseFiles", "html/template.ParseGlob", "html/template.ParseFS",
		"html/template.(*Template).ParseFiles", "html/template.(*Template).ParseGlob", "html/template.(*Template).ParseFS",
		"html/template.(*Template).escape", "html/template.escapeTemplate",
		"freemarker.template.Template.<init>", "freemarker.core.FMParser.", "org.apache.velocity.runtime.RuntimeInstance.parse",
		"com.github.mustachejava.DefaultMustacheFactory.compile", "com.samskivert.mustache.Mustache$Compiler.compile",
		"org.thymeleaf.TemplateEngine.<init>",
	)},
	// Routers and muxes: registering routes compiles their patterns.
	{kind: setup, name: "router construction", frames: evidence.FuncPrefix(
		"github.com/gorilla/mux.NewRouter", "github.com/gorilla/mux.(*Router).HandleFunc", "github.com/gorilla/mux.(*Router).Handle",
		"github.com/gorilla/mux.(*Router).Path", "github.com/gorilla/mux.(*Router).PathPrefix", "github.com/gorilla/mux.(*Route).Path",
		"github.com/gorilla/mux.(*Route).PathPrefix", "github.com/gorilla/mux.(*Route).Methods", "github.com/gorilla/mux.(*Route).Host",
		"github.com/gorilla/mux.(*Route).Queries", "github.com/gorilla/mux.(*Route).addRegexpMatcher", "github.com/gorilla/mux.newRouteRegexp",
		"github.com/go-chi/chi/v5.NewRouter", "github.com/go-chi/chi/v5.NewMux", "github.com/go-chi/chi/v5.(*Mux).handle",
		"github.com/go-chi/chi/v5.(*node).InsertRoute", "github.com/julienschmidt/httprouter.New",
		"github.com/julienschmidt/httprouter.(*node).addRoute", "github.com/gin-gonic/gin.New", "github.com/gin-gonic/gin.Default",
		"github.com/gin-gonic/gin.(*node).addRoute", "github.com/labstack/echo/v4.New", "github.com/labstack/echo/v4.(*Router).Add",
		"net/http.(*ServeMux).register", "net/http.parsePattern", "net/http.(*routingNode).addPattern",
	)},
	// Codecs, validators and clients whose construction is the expensive
	// part: they cache per type, per schema or per connection once built.
	{kind: setup, name: "codec, validator or client construction", frames: evidence.FuncPrefix(
		"github.com/go-playground/validator/v10.New", "github.com/xeipuuv/gojsonschema.NewSchema",
		"github.com/santhosh-tekuri/jsonschema/v5.(*Compiler).Compile", "github.com/santhosh-tekuri/jsonschema/v6.(*Compiler).Compile",
		"github.com/json-iterator/go.Config.Froze", "go.uber.org/zap.Config.Build", "go.uber.org/zap.NewProduction", "go.uber.org/zap.NewDevelopment",
		"com.fasterxml.jackson.databind.ObjectMapper.<init>", "javax.xml.bind.JAXBContext.newInstance", "jakarta.xml.bind.JAXBContext.newInstance",
		"javax.xml.transform.TransformerFactory.newInstance", "javax.xml.transform.TransformerFactory.newTemplates",
		"com.sun.org.apache.xalan.internal.xsltc.trax.TransformerFactoryImpl.newTemplates",
		"com.sun.org.apache.xalan.internal.xsltc.trax.TransformerFactoryImpl.newTransformer",
		"javax.xml.parsers.DocumentBuilderFactory.newInstance", "javax.xml.parsers.SAXParserFactory.newInstance",
		"javax.script.ScriptEngineManager.<init>", "javax.script.ScriptEngineManager.getEngineByName",
		"com.google.gson.Gson.<init>",
	)},
	// TLS material loaded or parsed per call: system roots, key pairs.
	{kind: setup, name: "TLS configuration loading", frames: evidence.FuncPrefix(
		"crypto/x509.SystemCertPool", "crypto/x509.(*CertPool).AppendCertsFromPEM", "crypto/tls.X509KeyPair", "crypto/tls.LoadX509KeyPair",
		"javax.net.ssl.SSLContext.init", "java.security.KeyStore.load",
		"SSL_CTX_new", "SSL_CTX_load_verify_locations", "SSL_CTX_use_certificate_chain_file", "SSL_CTX_use_certificate_file",
		"SSL_CTX_use_PrivateKey_file", "X509_STORE_load_locations", "X509_STORE_load_file",
	)},
	// POSIX regular expressions in C (Go's, Java's and PCRE's compilation
	// per call are LIB007's).
	{kind: setup, name: "regular expression compilation (regcomp)", frames: evidence.FuncPrefix("regcomp", "re_compile_internal")},

	// Password hashing: slow by design, so verified credentials are
	// meant to be remembered, not hashed again with every request.
	{kind: kdf, name: "password hashing", frames: evidence.FuncPrefix(
		"golang.org/x/crypto/pbkdf2.", "crypto/pbkdf2.", "golang.org/x/crypto/bcrypt.", "golang.org/x/crypto/scrypt.",
		"golang.org/x/crypto/argon2.", "github.com/alexedwards/argon2id.", "github.com/matthewhartstonge/argon2.",
		"com.sun.crypto.provider.PBKDF2KeyImpl.", "com.sun.crypto.provider.PBKDF2Core", "javax.crypto.SecretKeyFactory.generateSecret",
		"org.mindrot.jbcrypt.BCrypt.", "org.springframework.security.crypto.bcrypt.", "org.springframework.security.crypto.argon2.",
		"org.springframework.security.crypto.scrypt.", "org.springframework.security.crypto.password.Pbkdf2PasswordEncoder.",
		"org.bouncycastle.crypto.generators.SCrypt.", "org.bouncycastle.crypto.generators.Argon2BytesGenerator.",
		"org.bouncycastle.crypto.generators.PKCS5S2ParametersGenerator.", "org.bouncycastle.crypto.generators.BCrypt.",
		"org.bouncycastle.crypto.generators.OpenBSDBCrypt.", "de.mkammerer.argon2.", "at.favre.lib.crypto.bcrypt.", "com.password4j.",
		"PKCS5_PBKDF2_HMAC", "ossl_pkcs5_pbkdf2_hmac_ex", "kdf_pbkdf2_derive", "EVP_PBE_scrypt", "crypto_pwhash",
		"argon2_hash", "argon2_verify", "argon2i_", "argon2id_", "argon2d_", "crypt_r", "crypt_rn", "crypt_ra", "_crypt_blowfish_rn",
		"crypt_bcrypt_rn", "crypt_sha512crypt_rn", "crypt_yescrypt_rn",
	)},

	// A metrics registry gathered whole outside a scrape: every
	// collector collected, every family sorted and checked.
	{kind: gather, name: "gathering a whole metrics registry", frames: evidence.FuncPrefix(
		"github.com/prometheus/client_golang/prometheus.Gatherers.Gather", "github.com/prometheus/client_golang/prometheus.(*Registry).Gather",
		"github.com/prometheus/client_golang/prometheus.GathererFunc.Gather", "github.com/prometheus/client_golang/prometheus/testutil.",
	), job: evidence.FuncPrefix("github.com/prometheus/client_golang/prometheus/promhttp.", "github.com/prometheus/common/expfmt.")},
	// Collections sorted or iterated whole: Go's sort and map iteration,
	// the JDK's sorts and map iterators, qsort and std::sort in C and C++.
	{kind: gather, name: "sorting or iterating a whole collection", generic: true, frames: evidence.Any(
		evidence.FuncPrefix(
			"sort.Sort", "sort.Stable", "sort.Slice", "sort.SliceStable", "sort.Strings", "sort.Ints", "sort.Float64s",
			"slices.Sort", "slices.SortFunc", "slices.SortStableFunc", "runtime.mapiternext", "runtime.mapiterinit",
			"internal/runtime/maps.(*Iter).Next", "internal/runtime/maps.(*Iter).Init", "maps.Keys", "maps.Values", "maps.All", "maps.Copy",
			"maps.Clone",
			"java.util.Collections.sort", "java.util.Arrays.sort", "java.util.List.sort", "java.util.ArrayList.sort", "java.util.TimSort.",
			"java.util.ComparableTimSort.", "java.util.DualPivotQuicksort.", "java.util.stream.SortedOps",
			"java.util.HashMap$HashIterator.", "java.util.HashMap.forEach", "java.util.HashMap$EntrySpliterator.forEachRemaining",
			"java.util.HashMap$ValueSpliterator.forEachRemaining", "java.util.HashMap$KeySpliterator.forEachRemaining",
			"java.util.TreeMap.successor", "java.util.TreeMap$PrivateEntryIterator.", "java.util.concurrent.ConcurrentHashMap$Traverser.advance",
			"qsort", "__qsort_r", "msort_with_tmp", "std::__introsort_loop", "std::__insertion_sort", "std::__final_insertion_sort",
			"std::_Rb_tree_increment",
		),
	)},
}

// startup is code that runs once, at initialisation: work under it is
// done once by definition.
var startup = frames.Startup
