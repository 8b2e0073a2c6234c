package version

import "testing"

func TestLinkerVersionWins(t *testing.T) {
	old := Version
	defer func() { Version = old }()
	Version = "v9.8.7"
	if got := Tool(); got != "perfdoctor v9.8.7" {
		t.Fatalf("Tool() = %q", got)
	}
	Version = ""
	if got := String(); got == "" {
		t.Fatal("no version without -ldflags")
	}
}
