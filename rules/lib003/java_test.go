package lib003

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

func TestJacksonOnTheJVM(t *testing.T) {
	res := run(testprof.Build(
		testprof.Stack{Value: 200, Funcs: []string{"java.lang.reflect.Method.invoke", "com.fasterxml.jackson.databind.ser.BeanPropertyWriter.serializeAsField",
			"com.fasterxml.jackson.databind.ser.std.BeanSerializerBase.serializeFields", "com.fasterxml.jackson.databind.ObjectMapper.writeValueAsString",
			"com.acme.api.CatalogController.list", "com.acme.api.Server.handle"}},
		testprof.Stack{Value: 800, Funcs: []string{"com.acme.api.Server.handle"}},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding, got %+v", res)
	}
	f := res.Findings[0]
	if !strings.HasPrefix(f.Summary, "Jackson serialization uses 20") || !strings.Contains(f.Summary, "CatalogController.list") || !strings.Contains(f.Fix, "ObjectMapper") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
}
