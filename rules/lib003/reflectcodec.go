// Package lib003 detects reflection-driven serialization (encoding/json,
// encoding/xml, gob, the protobuf runtime, YAML, msgpack) dominating CPU
// (finding class reflection-serialization).
package lib003

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB003.
var Rule = &rules.Rule{
	ID:    "LIB003",
	Class: "reflection-serialization",
	Doc: rules.Doc{
		Title: "Reflection-based serialization takes a large share of CPU",
		Text: `Generic codecs walk each value's type at run time: encoding/json,
encoding/xml and gob through reflect, the protobuf runtime through its
per-message coder tables, YAML and msgpack libraries through reflect again.
Each call re-discovers what generated code knows at compile time, allocates,
and escapes strings. Serializing the same rarely-changing value on every
request multiplies the cost for nothing.`,
		Evidence: `CPU share of samples with a frame of a generic codec on the stack:
encoding/json (and encoding/json/v2, jsontext), encoding/xml, encoding/gob, the
protobuf runtime (google.golang.org/protobuf proto, internal/impl,
internal/encoding, protojson, prototext; github.com/golang/protobuf/proto and
jsonpb; github.com/gogo/protobuf/proto), YAML (gopkg.in/yaml, sigs.k8s.io/yaml,
go.yaml.in/yaml, goccy/go-yaml), msgpack (vmihailenco/msgpack, ugorji/go/codec),
and the faster reflection-based JSON libraries (json-iterator, goccy/go-json,
sonic), which get a smaller estimate; on the JVM Jackson (com.fasterxml.jackson),
Gson and Java serialization (ObjectOutputStream/ObjectInputStream).
Reflection frames (reflect.*, java.lang.reflect, jdk.internal.reflect) count
when under one of them; samples under a logger are left to LIB008. Samples are split into
encoding and decoding by the codec's entry point and charged to the
application code that called it. Thrift is not counted: its
Go codec is generated code, and an unbuffered Thrift transport is LIB005's
finding. Reports from 5% of CPU.`,
		Fix: `Cache the serialized form of values that rarely change (a configuration, a
catalogue, a list every request returns) and re-encode on change. For types
on the hot path use generated code: easyjson for JSON, vtprotobuf
(MarshalVT/UnmarshalVT and its gRPC codec) for protobuf, msgp for msgpack. Or
switch to a faster library: bytedance/sonic (amd64, arm64), goccy/go-json,
json-iterator. gogo/protobuf is unmaintained: do not move to it.`,
		Before: `func (h *handler) catalogue(w http.ResponseWriter, r *http.Request) {
    b, _ := json.Marshal(h.store.Catalogue()) // same value, every request
    w.Write(b)
}`,
		After: `// re-encoded when the catalogue changes, not per request
b := h.catalogueJSON.Load().([]byte)
w.Write(b)`,
		Caveats: caveat,
		Since:   "0.1",
		Refs: []string{
			"https://github.com/mailru/easyjson",
			"https://github.com/planetscale/vtprotobuf",
			"https://github.com/bytedance/sonic",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks, facts.Owners},
	Check: check,
}

const caveat = "Generated code must be regenerated when the types change; a faster drop-in library can differ from encoding/json in edge cases (invalid UTF-8, HTML escaping, map key order), so run the service's tests with it."

// codec is one serialization library.
type codec struct {
	name   string
	frames evidence.Matcher
	fix    string
	fast   bool // already a fast library: a smaller estimate
}

const (
	pbGo   = "google.golang.org/protobuf/"
	jsonFx = "For the types on this path use generated code (github.com/mailru/easyjson) or a faster library " +
		"(github.com/bytedance/sonic on amd64/arm64, github.com/goccy/go-json, or github.com/json-iterator/go with " +
		"ConfigCompatibleWithStandardLibrary); stream large values with json.NewEncoder(w) instead of Marshal then Write."
)

var codecs = []codec{
	{name: "encoding/json", frames: evidence.FuncPrefix("encoding/json.", "encoding/json/"), fix: jsonFx},
	{name: "protobuf", frames: evidence.FuncPrefix(pbGo+"proto.", pbGo+"internal/impl.", pbGo+"internal/encoding/",
		pbGo+"encoding/protojson.", pbGo+"encoding/prototext.", "github.com/golang/protobuf/proto.",
		"github.com/golang/protobuf/jsonpb.", "github.com/gogo/protobuf/proto.", "github.com/gogo/protobuf/jsonpb."),
		fix: "Generate marshalling code with vtprotobuf (github.com/planetscale/vtprotobuf: MarshalVT, UnmarshalVT, SizeVT, " +
			"and its gRPC codec so the server uses them), which skips the runtime's generic coder tables; do not move to " +
			"gogo/protobuf, which is unmaintained. Keep protojson/jsonpb off the hot path: the binary format is several times cheaper."},
	{name: "encoding/xml", frames: evidence.FuncPrefix("encoding/xml."),
		fix: "Keep XML off the hot path: cache encoded documents that rarely change, or move the hot exchange to a " +
			"binary or JSON codec with generated code."},
	{name: "encoding/gob", frames: evidence.FuncPrefix("encoding/gob."),
		fix: "Keep one gob Encoder/Decoder per stream (type information is sent once, not per value) or move the hot " +
			"path to a generated codec (vtprotobuf, msgp)."},
	{name: "YAML", frames: evidence.FuncPrefix("gopkg.in/yaml.", "sigs.k8s.io/yaml", "go.yaml.in/yaml/", "github.com/goccy/go-yaml", "github.com/ghodss/yaml"),
		fix: "Parse YAML once (at start-up or on change) and keep the result; use JSON with generated code or a binary " +
			"codec for per-request data."},
	{name: "msgpack", frames: evidence.FuncPrefix("github.com/vmihailenco/msgpack", "github.com/ugorji/go/codec"),
		fix: "Generate the codec for the hot types with github.com/tinylib/msgp instead of reflection."},
	{name: "Jackson", frames: evidence.FuncPrefix("com.fasterxml.jackson.", "com/fasterxml/jackson/"),
		fix: "Share one ObjectMapper (it is thread-safe and caches serializers; creating one per call rebuilds them), " +
			"use a typed ObjectReader/ObjectWriter (mapper.readerFor(T.class)) on the hot path, add the Blackbird module " +
			"(Afterburner before JDK 11) to replace reflection with generated accessors, and cache the serialized form of values that rarely change."},
	{name: "Gson", frames: evidence.FuncPrefix("com.google.gson.", "com/google/gson/"),
		fix: "Share one Gson instance, register TypeAdapters for the hot types instead of the reflective adapter, or move the hot path to Jackson with Blackbird."},
	{name: "Java serialization", frames: evidence.FuncPrefix("java.io.ObjectOutputStream", "java.io.ObjectInputStream", "java/io/ObjectOutputStream", "java/io/ObjectInputStream"),
		fix: "Replace Java serialization on the hot path with an explicit format (protobuf, JSON with Jackson); it is slow, reflective and unsafe to deserialize."},
	{name: "fast JSON library", frames: evidence.FuncPrefix("github.com/json-iterator/go", "github.com/goccy/go-json", "github.com/bytedance/sonic"),
		fast: true,
		fix: "This is already a fast JSON library: cache the encoded form of values that rarely change, encode less " +
			"(fewer fields, smaller responses), or generate code for the hottest types (easyjson)."},
}

// Frames is every codec's family.
var Frames = func() evidence.Matcher {
	ms := make([]evidence.Matcher, len(codecs))
	for i, c := range codecs {
		ms[i] = c.frames
	}
	return evidence.Any(ms...)
}()

var (
	reflectFrames = evidence.FuncPrefix("reflect.", "java.lang.reflect.", "jdk.internal.reflect.", "java/lang/reflect/", "jdk/internal/reflect/")
	// frames.Loggers encode their records (logrus's JSONFormatter, zap's reflected
	// fields): LIB008's concern.
)

const (
	minShare = 0.05
	// recoverable: generated code, typed structs or a faster library
	// typically run in 30-50% of the time of a reflection-based codec and
	// allocate far less, so the GC's share shrinks too: casebook B4's typed
	// decoding removed 1.1x the codec's share of CPU per request, A4's
	// cached encoding 1.35x (casebook/README.md, calibration).
	recoverable     = 0.9
	recoverableFast = 0.3
	recoverableHit  = 1.0 // a cached encoding leaves a copy, and no garbage
	cacheSiteFrac   = 0.5 // of the codec share, from one encoding call site
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	inCodec, logged := cpu.Has(Frames), cpu.Has(frames.Loggers)
	in := func(s evidence.Sample) bool { return inCodec(s) && !logged(s) }
	share := cpu.ShareWhere(in)
	if share < minShare {
		return nil
	}
	inReflect := cpu.Has(reflectFrames)
	reflectShare := cpu.ShareWhere(func(s evidence.Sample) bool { return in(s) && inReflect(s) })

	// The top codec names the fix; the others are listed.
	type part struct {
		c     codec
		share float64
	}
	var parts []part
	for _, c := range codecs {
		has := cpu.Has(c.frames)
		if s := cpu.ShareWhere(func(sm evidence.Sample) bool { return in(sm) && has(sm) }); s > 0 {
			parts = append(parts, part{c, s})
		}
	}
	top := parts[0]
	for _, p := range parts[1:] {
		if p.share > top.share {
			top = p
		}
	}

	decoding := decoder(cpu)
	isDecode := func(s evidence.Sample) bool { return decoding(s) }
	decShare := cpu.ShareWhere(func(s evidence.Sample) bool { return in(s) && isDecode(s) })
	encShare := share - decShare

	app := func(fn string) bool { return rules.IsApplication(fn) && !Frames(fn) }
	caller := cpu.CallerOf(Frames, app)
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !in(s) {
			return nil
		}
		return caller(s)
	})
	encSites := cpu.TopSites(1, func(s evidence.Sample) *evidence.Frame {
		if !in(s) || isDecode(s) {
			return nil
		}
		return caller(s)
	})

	rate := recoverable
	if top.c.fast {
		rate = recoverableFast
	}
	impact := share * rate
	basis := fmt.Sprintf("share of CPU under generic codecs; generated code, typed structs or a faster library need 30-50%% of the time and allocate less, so about %.0f%% of it (case B4: 63%% of CPU here, CPU per request down 72%%)", rate*100)
	fix := top.c.fix
	cache := len(encSites) > 0 && encSites[0].Flat >= cacheSiteFrac*share && encSites[0].Flat >= minShare
	if cache {
		site := encSites[0]
		impact = site.Flat*recoverableHit + (share-site.Flat)*rate
		basis = fmt.Sprintf("share of CPU under generic codecs; one call site encodes %s of CPU, which a cached encoding removes (case A4: 57%% of CPU here, CPU per request down 77%%), and generated code or a faster library saves about %.0f%% of the rest", human.Percent(site.Flat), rate*100)
		fix = fmt.Sprintf("%s encodes on every call (%s of CPU): if the value changes rarely (configuration, a catalogue, a list every request returns), cache the encoded bytes and re-encode only when it changes (case A4). %s",
			rules.ShortFunc(site.Func), human.Percent(site.Flat), fix)
	}

	var whose []rules.Fact
	editable := true
	if len(sites) > 0 {
		// Generated code and caches are edits to the code that calls the
		// codec; inside a dependency or a packaged program the choice is
		// what goes through it and how it is configured.
		var w rules.Fact
		fix, w, editable = rules.Advise(facts.Get(pass.Facts, facts.Owners), sites[0].Frame, fix,
			"Reduce what goes through it (fewer or smaller messages and requests, watches or queries that return less), use its configuration where it offers a faster codec or caching, or choose a component that serializes less on this path.")
		whose = append(whose, w)
	}
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: basis,
		Summary:     fmt.Sprintf("%s serialization uses %s of CPU", top.c.name, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("serialization share of CPU", share),
			rules.Share("encoding", encShare),
			rules.Share("decoding", decShare),
			rules.Share("reflection (reflect.*) inside the codecs", reflectShare),
		},
		Fix:       fix,
		Caveats:   []string{caveat},
		Locations: rules.Locations(sites, "code calling the codec"),
		Frames:    cpu.Matched(Frames, 12),
	}
	for _, p := range parts {
		f.Evidence = append(f.Evidence, rules.Share(p.c.name+" share of CPU", p.share))
	}
	f.Evidence = append(f.Evidence, whose...)
	if cache && editable {
		f.Example = pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After
	}
	if len(sites) > 0 {
		verb := "encoding"
		if decShare > encShare {
			verb = "decoding"
		}
		f.Summary += fmt.Sprintf(", mostly %s, called from %s", verb, rules.ShortFunc(sites[0].Func))
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: in, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}

// decoder returns a predicate telling whether a sample is decoding: its
// outermost codec frame (the entry the application called) is an
// Unmarshal, Decode, Valid or Parse.
func decoder(st *evidence.Stacks) func(evidence.Sample) bool {
	inFamily := st.FrameHits(Frames)
	isDecode := st.FrameHits(func(fn string) bool {
		s := strings.ToLower(rules.ShortFunc(fn))
		return strings.Contains(s, "unmarshal") || strings.Contains(s, "decode") ||
			strings.Contains(s, "valid") || strings.Contains(s, "parse")
	})
	return func(s evidence.Sample) bool {
		for i := len(s.Frames) - 1; i >= 0; i-- { // from the root
			if id := s.Frames[i]; inFamily[id] {
				return isDecode[id]
			}
		}
		return false
	}
}
