package lib003

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

type item struct {
	ID     int64             `json:"id"`
	Name   string            `json:"name"`
	Price  float64           `json:"price"`
	Tags   []string          `json:"tags"`
	Attrs  map[string]string `json:"attrs"`
	Active bool              `json:"active"`
}

// catalogue is the same value for every request, as in case A4.
var catalogue = func() []item {
	items := make([]item, 40)
	for i := range items {
		items[i] = item{ID: int64(i), Name: "item " + strings.Repeat("x", i%7), Price: float64(i) * 1.25,
			Tags: []string{"a", "b", "c"}, Attrs: map[string]string{"color": "red", "size": "m"}, Active: i%2 == 0}
	}
	return items
}()

// serveCatalogue marshals the unchanging catalogue per request.
func serveCatalogue() {
	b, err := json.Marshal(catalogue)
	if err != nil {
		panic(err)
	}
	io.Discard.Write(b)
}

var cached, _ = json.Marshal(catalogue)

var digest [32]byte

// serveCached writes the cached encoding and does some other work.
func serveCached() {
	io.Discard.Write(cached)
	digest = sha256.Sum256(cached)
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnMarshalPerRequest(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 1, serveCatalogue))
	if len(res.Findings) != 1 {
		t.Fatalf("want a reflection-serialization finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.3 || f.Severity != rules.High {
		t.Errorf("impact %.2f severity %s: want high", f.Impact, f.Severity)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "serveCatalogue") {
		t.Errorf("locations %+v do not name the marshalling code", f.Locations)
	}
	if !strings.Contains(f.Summary, "encoding/json") || !strings.Contains(f.Summary, "serveCatalogue") {
		t.Errorf("summary %q", f.Summary)
	}
	if !strings.Contains(f.Fix, "cache the encoded bytes") || !strings.Contains(f.Fix, "easyjson") {
		t.Errorf("fix lacks the caching and generated-code advice: %s", f.Fix)
	}
}

func TestSilentWhenEncodingIsCached(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 1, serveCached))
	if len(res.Findings) != 0 {
		t.Fatalf("cached encoding reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

// Symbol names as in google.golang.org/protobuf v1.36 (proto/encode.go,
// internal/impl/encode.go) and google.golang.org/grpc's proto codec.
func TestFiresOnProtobufRuntimeUnderGRPC(t *testing.T) {
	pb := "google.golang.org/protobuf/"
	cpu := testprof.Build(
		stack(120, pb+"internal/impl.appendStringValidateUTF8", pb+"internal/impl.(*MessageInfo).marshalAppendPointer", pb+"internal/impl.(*MessageInfo).marshal",
			pb+"proto.MarshalOptions.marshal", pb+"proto.MarshalOptions.MarshalAppend", "google.golang.org/grpc/encoding/proto.(*codecV2).Marshal",
			"google.golang.org/grpc.encode", "google.golang.org/grpc.(*Server).sendResponse"),
		stack(80, pb+"internal/impl.(*MessageInfo).unmarshalPointer", pb+"internal/impl.(*MessageInfo).unmarshal", pb+"proto.UnmarshalOptions.unmarshal",
			pb+"proto.Unmarshal", "main.(*store).load", "main.(*server).Get"),
		stack(800, "main.(*server).Get"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("protobuf runtime not reported: %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Fix, "vtprotobuf") || !strings.Contains(f.Fix, "gogo/protobuf, which is unmaintained") {
		t.Errorf("fix %q", f.Fix)
	}
	if f.Locations[0].Function != "google.golang.org/grpc/encoding/proto.(*codecV2).Marshal" {
		t.Errorf("top caller %+v", f.Locations[0])
	}
	var dec float64
	for _, e := range f.Evidence {
		if e.Name == "decoding" {
			dec = e.Num
		}
	}
	if dec < 0.079 || dec > 0.081 {
		t.Errorf("decoding share %.3f, want 8%%", dec)
	}
}

func TestJSONDecodeNamesTheHandler(t *testing.T) {
	cpu := testprof.Build(
		stack(60, "reflect.Value.SetString", "encoding/json.(*decodeState).literalStore", "encoding/json.(*decodeState).value", "encoding/json.(*decodeState).object",
			"encoding/json.(*decodeState).value", "encoding/json.(*decodeState).unmarshal", "encoding/json.(*Decoder).Decode", "main.(*api).createOrder", "net/http.HandlerFunc.ServeHTTP"),
		stack(30, "encoding/json.checkValid", "encoding/json.Unmarshal", "main.(*api).createOrder", "net/http.HandlerFunc.ServeHTTP"),
		stack(910, "main.work"),
	)
	f := run(cpu).Findings
	if len(f) != 1 || f[0].Locations[0].Function != "main.(*api).createOrder" || !strings.Contains(f[0].Summary, "mostly decoding") {
		t.Fatalf("decode finding: %+v", f)
	}
	if strings.Contains(f[0].Fix, "cache the encoded bytes") {
		t.Errorf("caching advised for decoding: %s", f[0].Fix)
	}
}

func TestSilentOnThriftGeneratedCodecAndSmallShares(t *testing.T) {
	th := "github.com/apache/thrift/lib/go/thrift."
	cpu := testprof.Build(
		stack(200, th+"(*TBinaryProtocol).WriteString", "gen-go/hbase.(*TPut).writeField1", "gen-go/hbase.(*TPut).Write", "main.put"),
		stack(40, "encoding/json.(*encodeState).marshal", "encoding/json.Marshal", "main.report"),
		stack(760, "main.work"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("thrift / 4%% json reported: %+v", res.Findings[0])
	}
}

func TestFastLibraryGetsSmallerEstimate(t *testing.T) {
	cpu := testprof.Build(
		stack(200, "github.com/json-iterator/go.(*structEncoder).Encode", "github.com/json-iterator/go.(*frozenConfig).Marshal", "main.render", "main.handle"),
		stack(100, "github.com/json-iterator/go.(*Iterator).ReadObject", "github.com/json-iterator/go.(*frozenConfig).Unmarshal", "main.parse", "main.handle"),
		stack(700, "main.handle"),
	)
	f := run(cpu).Findings
	if len(f) != 1 || f[0].Impact > rules.Estimated(0.2*recoverableHit+0.1*recoverableFast)+1e-9 || !strings.Contains(f[0].Fix, "already a fast JSON library") {
		t.Fatalf("json-iterator finding: %+v", f)
	}
}

func TestSilentWhenTheEncoderBelongsToALogger(t *testing.T) {
	lr := "github.com/sirupsen/logrus."
	cpu := testprof.Build(
		stack(200, "encoding/json.(*encodeState).reflectValue", "encoding/json.(*encodeState).marshal", "encoding/json.(*Encoder).Encode",
			lr+"(*JSONFormatter).Format", lr+"(*Entry).write", lr+"(*Entry).log", lr+"(*Entry).Info", "main.handle"),
		stack(800, "main.handle"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("logrus JSONFormatter reported as serialization: %+v", res.Findings[0])
	}
}

// etcd's own protobuf encoding: "use vtprotobuf" is a change to etcd, so a
// user running the distribution's etcd gets what they can change instead.
func TestPackagedProgramGetsNoCodeEdit(t *testing.T) {
	pb := "google.golang.org/protobuf/"
	cpu := testprof.Build(
		stack(300, pb+"internal/impl.(*MessageInfo).marshal", pb+"proto.MarshalOptions.marshal", pb+"proto.Marshal",
			"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.(*watchServer).sendLoop", "go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.(*serverWatchStream).run"),
		stack(700, "go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).run"),
	)
	for _, tc := range []struct {
		exe  string
		edit bool
	}{{"/usr/bin/etcd", false}, {"/src/etcd/bin/etcd", true}} {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "go.etcd.io/etcd/server/v3", MainVersion: "(devel)"}, Executable: tc.exe}}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("%s: %+v", tc.exe, res)
		}
		f := res.Findings[0]
		if got := strings.Contains(f.Fix, "vtprotobuf"); got != tc.edit {
			t.Errorf("%s: vtprotobuf advised %v, want %v: %q", tc.exe, got, tc.edit, f.Fix)
		}
		if !tc.edit && !strings.Contains(f.Fix, "Reduce what goes through it") {
			t.Errorf("%s: fix %q", tc.exe, f.Fix)
		}
	}
}
