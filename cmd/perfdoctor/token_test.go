package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/agent"
	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
)

// TestCollectFromAgentWithToken collects from a real agent that requires a
// bearer token: refused without it, complete with it from a file or the
// environment.
func TestCollectFromAgentWithToken(t *testing.T) {
	const token = "s3cret-agent-token"
	a, err := agent.Start(t.Context(), agent.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	target := "http://" + a.Addr()
	dir := t.TempDir()

	t.Setenv(collect.TokenEnv, "")
	code, _, stderr := perfdoctor(t, "collect", target, "-d", "1s", "--trace", "0", "-o", filepath.Join(dir, "none"))
	wantOneLineError(t, code, stderr, "401")

	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"file": {"--token-file", tokenFile},
		"env":  nil,
	} {
		if name == "env" {
			t.Setenv(collect.TokenEnv, token)
		}
		out := filepath.Join(dir, name)
		code, _, stderr := perfdoctor(t, append([]string{"collect", target, "-d", "1s", "--trace", "0", "-o", out}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		m, err := bundle.ReadManifest(out)
		if err != nil || m.Partial {
			t.Errorf("%s: manifest %+v, %v", name, m, err)
		}
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	code, _, stderr = perfdoctor(t, "collect", target, "--token-file", empty, "-o", filepath.Join(dir, "x"))
	wantOneLineError(t, code, stderr, "must hold one non-empty line")
}
