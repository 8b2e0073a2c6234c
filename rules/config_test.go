package rules

import (
	"slices"
	"testing"
)

func TestConfigFixEnviron(t *testing.T) {
	c := &ConfigFix{Changes: []ConfigChange{
		{Kind: ConfigEnv, Name: "GODEBUG", Value: "madvdontneed=1"},
		{Kind: ConfigJVMFlag, Name: "-XX:+UseParallelGC"},
		{Kind: ConfigJVMFlag, Name: "-Xmx", Value: "2g"},
	}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	got := c.Environ([]string{"JAVA_TOOL_OPTIONS=-Dfile.encoding=UTF-8", "HOME=/root"})
	want := []string{"JAVA_TOOL_OPTIONS=-Dfile.encoding=UTF-8 -XX:+UseParallelGC -Xmx2g", "HOME=/root", "GODEBUG=madvdontneed=1"}
	if !slices.Equal(got, want) {
		t.Errorf("environ = %q, want %q", got, want)
	}
	if s := c.String(); s != "GODEBUG=madvdontneed=1 -XX:+UseParallelGC -Xmx2g" {
		t.Errorf("String = %q", s)
	}
}

func TestConfigFixValidate(t *testing.T) {
	for _, c := range []ConfigFix{
		{},
		{Changes: []ConfigChange{{Kind: ConfigEnv, Name: "A=B", Value: "1"}}},
		{Changes: []ConfigChange{{Kind: ConfigJVMFlag, Name: "XX:+UseG1GC"}}},
		{Changes: []ConfigChange{{Kind: ConfigJVMFlag, Name: "-Xmx", Value: "2g -Dx=1"}}},
		{Changes: []ConfigChange{{Kind: "sysctl", Name: "net.core.somaxconn", Value: "4096"}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
