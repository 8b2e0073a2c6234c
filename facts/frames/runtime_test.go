package frames

import (
	"debug/dwarf"
	"debug/elf"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// newestGo is the newest Go toolchain the rules are checked against, as
// scripts/test.sh fetches it; PERFDOCTOR_NEWEST_GO overrides it.
const newestGo = "go1.27.0"

// olderGoOnly are runtime names the rules still match for targets built
// with an older Go, which the current toolchains no longer have.
var olderGoOnly = map[string]string{
	"runtime.findrunnable": "findRunnable from Go 1.21",
	"runtime.scanobject":   "scanObject from Go 1.26",
	"runtime.mapiterinit":  "internal/runtime/maps.(*Iter).Init from Go 1.24 (swiss maps)",
	"runtime.mapiternext":  "internal/runtime/maps.(*Iter).Next from Go 1.24 (swiss maps)",
}

// runtimeName is a function name or prefix in the runtime's namespace.
var runtimeName = regexp.MustCompile(`^runtime\.[A-Za-z0-9_().*]+$`)

// TestRuntimeFamiliesExist checks every runtime function name the rules
// match (string literals "runtime.…" in rules/ and facts/) against the functions of a
// program built with the installed Go and with the newest Go: the runtime
// renames its internals between releases (findrunnable became findRunnable
// in 1.21), and a family matching a name that no longer exists silently
// stops attributing cost.
func TestRuntimeFamiliesExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with two toolchains")
	}
	names := ruleRuntimeNames(t)
	if len(names) < 10 {
		t.Fatalf("found only %d runtime names in rules/ and facts/: %v", len(names), names)
	}
	newest := os.Getenv("PERFDOCTOR_NEWEST_GO")
	if newest == "" {
		newest = newestGo
	}
	for _, toolchain := range []string{"local", newest} {
		t.Run(toolchain, func(t *testing.T) {
			funcs := builtFuncs(t, toolchain)
			for _, name := range names {
				if _, old := olderGoOnly[name]; old {
					continue
				}
				if !hasPrefix(funcs, name) {
					t.Errorf("the rules match %q, which no function of a %s build starts with", name, toolchain)
				}
			}
		})
	}
}

func ruleRuntimeNames(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	fset := token.NewFileSet()
	var err error
	for _, root := range []string{"..", "../../rules"} { // the facts and the rules
		err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && runtimeName.MatchString(s) {
						seen[s] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// probe links what the casebook services use: the HTTP server, profiling,
// tracing, timers and channels, so the runtime's functions are all there.
const probe = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"runtime/trace"
	"os"
	"time"
)

func main() {
	trace.Start(os.Stdout)
	defer trace.Stop()
	ch := make(chan int, 1)
	go func() { time.Sleep(time.Millisecond); ch <- 1 }()
	<-ch
	http.ListenAndServe("127.0.0.1:0", nil)
}
`

// builtFuncs builds the probe with toolchain and returns every function
// its DWARF names, inlined ones included.
func builtFuncs(t *testing.T, toolchain string) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+toolchain, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && strings.Contains(string(out), "download") {
			t.Skipf("toolchain %s not available: %s", toolchain, out)
		}
		t.Fatalf("go build with %s: %v\n%s", toolchain, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	var funcs []string
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagSubprogram {
			if name, ok := e.Val(dwarf.AttrName).(string); ok {
				funcs = append(funcs, name)
			}
		}
	}
	sort.Strings(funcs)
	return funcs
}

func hasPrefix(sorted []string, prefix string) bool {
	i := sort.SearchStrings(sorted, prefix)
	return i < len(sorted) && strings.HasPrefix(sorted[i], prefix)
}
