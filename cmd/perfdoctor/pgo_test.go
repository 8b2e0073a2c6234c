package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
)

// pgoCase is the casebook case the PGO test profiles: string formatting
// through fmt's interfaces, the kind of hot path PGO's inlining and
// devirtualisation work on.
const pgoCase = "c4"

// TestPGOBuildsTheCasebook profiles a casebook service under load, on one
// CPU so it is CPU-bound, finds BLD001 (built without PGO), writes the
// profile with perfdoctor pgo and builds C4's handler with it.
func TestPGOBuildsTheCasebook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the casebook twice")
	}
	bin := buildCasebook(t)
	dir := t.TempDir()
	prefix, how := oneCPU(t)
	t.Logf("one CPU through %s", how)
	app, pprof := closedPort(t), closedPort(t)
	p, err := supervise.Start(exec.Command("sh", "-c", fmt.Sprintf("%sexec %s -case %s -variant bad -listen %s -pprof %s", prefix, bin, pgoCase, app, pprof)), true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	code, stdout, stderr := perfdoctor(t, "run", "--target", "http://"+pprof, "--load", "http://"+app+"/", "-d", "5s", "--warmup", "1s", "-c", "8", "-o", dir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	p.Stop()
	if !strings.Contains(stdout, "no PGO") {
		t.Errorf("the build information of the casebook binary was not read\n%s", stdout)
	}
	// BLD001 needs the service to use half its CPU, which a machine busy
	// with other work may not leave it.
	if !strings.Contains(stdout, "pgo-not-used (BLD001)") {
		if la := load.LoadAverage(); la <= 1.5*float64(runtime.NumCPU()) {
			t.Errorf("a CPU-bound casebook service built without PGO: no BLD001 (load average %.1f)\n%s", la, stdout)
		} else {
			t.Logf("no BLD001 on a machine with load average %.1f: the service may not have had half its CPU", la)
		}
	}

	profile := filepath.Join(dir, "default.pgo")
	code, stdout, stderr = perfdoctor(t, "pgo", filepath.Join(dir, "bundle"), "-o", profile)
	if code != 0 || !strings.Contains(stdout, "representative of production") {
		t.Fatalf("pgo: exit %d\n%s%s", code, stdout, stderr)
	}
	// The PGO build is the test's costliest step: a profile recompiles
	// every package the program imports, the standard library included. CI
	// builds C4's handler alone (testdata/pgoc4: half the casebook's
	// packages, the same hot functions); the documented verify run
	// (PERFDOCTOR_PGO_KEEP) builds the whole casebook, as docs/pgo.md shows.
	target := "./testdata/pgoc4"
	keep := os.Getenv("PERFDOCTOR_PGO_KEEP")
	if keep != "" {
		target = "github.com/perfdoctor/perfdoctor/casebook/cmd/casebook"
	}
	pgoBin := filepath.Join(dir, "casebook-pgo")
	if out, err := exec.Command("go", "build", "-pgo="+profile, "-o", pgoBin, target).CombinedOutput(); err != nil {
		t.Fatalf("go build -pgo: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", pgoBin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-pgo="+profile) {
		t.Errorf("the PGO build does not record its profile: %v\n%s", err, out)
	}
	if keep != "" {
		// For the documented verify run: keep both builds and the profile.
		for _, f := range []string{bin, pgoBin, profile} {
			if b, err := os.ReadFile(f); err == nil {
				os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o755)
			}
		}
	}
}

func TestPGOBadInput(t *testing.T) {
	empty := t.TempDir()
	code, _, stderr := perfdoctor(t, "pgo")
	wantOneLineError(t, code, stderr, "at least one BUNDLE")
	code, _, stderr = perfdoctor(t, "pgo", empty)
	wantOneLineError(t, code, stderr, "-o FILE")
	code, _, stderr = perfdoctor(t, "pgo", empty, "-o", filepath.Join(empty, "default.pgo"))
	wantOneLineError(t, code, stderr, "no profiles")
}
