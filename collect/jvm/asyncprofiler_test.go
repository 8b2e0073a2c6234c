package jvm

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
)

// profilerJar is the real async-profiler jar scripts/test.sh fetches.
func profilerJar(t *testing.T) string {
	t.Helper()
	jar := os.Getenv(ProfilerEnv)
	if jar == "" {
		if ci := strings.ToLower(os.Getenv("CI")); ci != "" && ci != "0" && ci != "false" {
			t.Fatalf("CI is set and %s is not: scripts/test.sh fetches async-profiler", ProfilerEnv)
		}
		t.Skipf("skipped: %s is not set (scripts/test.sh fetches async-profiler through Maven)", ProfilerEnv)
	}
	return jar
}

// makeJar writes a jar holding entries, as the Maven one does per platform.
func makeJar(t *testing.T, entries map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range entries {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "async-profiler.jar")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindProfiler(t *testing.T) {
	plat, err := platform()
	if err != nil {
		t.Skip(err)
	}
	elf := []byte("\x7fELF this machine's library")
	so := filepath.Join(t.TempDir(), libraryName)
	os.WriteFile(so, elf, 0o644)
	jar := makeJar(t, map[string][]byte{plat + "/" + libraryName: elf, "macos/" + libraryName: []byte("other")})
	for _, path := range []string{so, jar} {
		lib, from, err := findProfiler(path)
		if err != nil || !bytes.Equal(lib, elf) || from != path {
			t.Errorf("%s: %q from %s, %v", path, lib, from, err)
		}
	}
	t.Setenv(ProfilerEnv, jar)
	if lib, from, err := findProfiler(""); err != nil || from != jar || !bytes.Equal(lib, elf) {
		t.Errorf("from $%s: %q from %s, %v", ProfilerEnv, lib, from, err)
	}

	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("not a library"), 0o644)
	for path, want := range map[string]string{
		text: "neither a shared library nor a jar",
		makeJar(t, map[string][]byte{"macos/" + libraryName: elf}): "has no " + plat,
		filepath.Join(t.TempDir(), "missing.so"):                   "no such file",
	} {
		if _, _, err := findProfiler(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", path, err, want)
		}
	}
	// Nothing named and nothing fetched: say how to get it.
	t.Setenv(ProfilerEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, _, err := findProfiler(""); err == nil || !strings.Contains(err.Error(), "perfdoctor fetch-async-profiler") {
		t.Errorf("empty cache: %v", err)
	}
}

// The library goes into the target's /tmp under a name that holds its
// checksum, so a second collection loads the file the JVM already has; a
// link planted at that name is replaced, never written through.
func TestPlaceLibrary(t *testing.T) {
	proc := t.TempDir()
	tmp := filepath.Join(proc, "42", "root", "tmp")
	os.MkdirAll(tmp, 0o755)
	lib := []byte("\x7fELF library")
	path, err := placeLibrary(proc, 42, lib)
	if err != nil || !strings.HasPrefix(path, "/tmp/perfdoctor-async-profiler-") {
		t.Fatalf("placed at %q: %v", path, err)
	}
	host := filepath.Join(tmp, filepath.Base(path))
	st, err := os.Stat(host)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("copy %v, %v", st, err)
	}
	if again, err := placeLibrary(proc, 42, lib); err != nil || again != path {
		t.Errorf("second placement %q, %v", again, err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Remove(host)
	os.Symlink(victim, host)
	if _, err := placeLibrary(proc, 42, lib); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Error("written through a planted link")
	}
	if st, err := os.Lstat(host); err != nil || !st.Mode().IsRegular() {
		t.Errorf("link not replaced: %v %v", st, err)
	}
	// A /tmp the library cannot be written to: refused, and said why.
	os.MkdirAll(filepath.Join(proc, "43", "root"), 0o755)
	os.WriteFile(filepath.Join(proc, "43", "root", "tmp"), nil, 0o644)
	if _, err := placeLibrary(proc, 43, lib); err == nil || !strings.Contains(err.Error(), "target's /tmp") {
		t.Errorf("unwritable /tmp: %v", err)
	}
}

func TestAgentReplies(t *testing.T) {
	for out, want := range map[string]int{
		"4242:\nreturn code: 0":   0,
		"4242:\nreturn code: 100": 100,
		"4242:\nDynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.": -1,
	} {
		if got := returnCode(out); got != want {
			t.Errorf("%q: %d, want %d", out, got, want)
		}
	}
	log := "[WARN] Kernel symbols are unavailable\n[ERROR] Profiler already started\n"
	if got := lastLogError(log); got != "Profiler already started" {
		t.Errorf("log error %q", got)
	}
}

// FetchProfiler checks the jar's checksum before unpacking anything; the
// real jar, from a file, its URL or a repository root on loopback,
// unpacks both Linux libraries.
func TestFetchProfiler(t *testing.T) {
	jarPath := profilerJar(t)
	jar, err := os.ReadFile(jarPath)
	if err != nil {
		t.Fatal(err)
	}
	body := jar
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/maven2/"+profilerArtifactPath() {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	for _, from := range []string{jarPath, srv.URL + "/maven2/", srv.URL + "/maven2/" + profilerArtifactPath()} {
		dir := t.TempDir()
		lib, err := FetchProfiler(context.Background(), FetchOptions{From: from, Dir: dir, Client: srv.Client()})
		if err != nil {
			t.Fatalf("from %s: %v", from, err)
		}
		if got, _, err := findProfiler(lib); err != nil || len(got) < 100_000 {
			t.Errorf("unpacked library %s: %d bytes, %v", lib, len(got), err)
		}
		for _, plat := range []string{"linux-x64", "linux-arm64"} {
			if _, err := os.Stat(filepath.Join(dir, plat, libraryName)); err != nil {
				t.Error(err)
			}
		}
	}
	body = append(append([]byte(nil), jar...), 0)
	tampered := filepath.Join(t.TempDir(), "async-profiler.jar")
	os.WriteFile(tampered, body, 0o644)
	empty := t.TempDir()
	for from, want := range map[string]string{
		srv.URL + "/maven2":          "SHA-256",
		tampered:                     "SHA-256",
		srv.URL + "/elsewhere":       "404",
		filepath.Join(empty, "none"): "no such file",
	} {
		if _, err := FetchProfiler(context.Background(), FetchOptions{From: from, Dir: empty, Client: srv.Client()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("from %s: %v, want %q", from, err, want)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("wrote %v from a failed download", ents)
	}
}

// Without --from the jar comes through Maven's own client: from the
// mirror the user's settings.xml names (here a repository on loopback
// serving the machine's local Maven repository, where scripts/test.sh's
// own mvn fetches left the copy plugin), with the repository's checksums
// checked by Maven and the pinned SHA-256 by perfdoctor.
func TestFetchProfilerThroughMaven(t *testing.T) {
	jar, err := os.ReadFile(profilerJar(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		skipOrFailInCI(t, "no mvn on PATH (scripts/test.sh installs maven)")
	}
	home, _ := os.UserHomeDir()
	local := filepath.Join(home, ".m2", "repository")
	plugin := strings.Split(mavenDependencyPlugin, ":")
	if _, err := os.Stat(filepath.Join(append([]string{local}, append(strings.Split(plugin[0], "."), plugin[1], plugin[2])...)...)); err != nil {
		skipOrFailInCI(t, "the local Maven repository has no "+mavenDependencyPlugin+" (scripts/test.sh's mvn fetches put it there)")
	}
	served, sha1 := jar, ""
	var asked []string
	var mu sync.Mutex
	files := http.StripPrefix("/maven2/", http.FileServer(http.Dir(local)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		body, sum := served, sha1
		mu.Unlock()
		switch r.URL.Path {
		case "/maven2/" + profilerArtifactPath():
			w.Write(body)
		case "/maven2/" + profilerArtifactPath() + ".sha1":
			if sum == "" {
				s := sha1Hex(body)
				sum = s
			}
			io.WriteString(w, sum)
		case "/maven2/" + strings.TrimSuffix(profilerArtifactPath(), ".jar") + ".pom":
			http.NotFound(w, r)
		default:
			files.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	// One local repository, with the profiler's artifact removed before each
	// fetch so Maven asks the mirror for it again; the copy plugin and its
	// dependencies, resolved through the mirror by the first fetch, stay
	// (resolving them afresh took some 10 s a fetch).
	repository := filepath.Join(t.TempDir(), "repository")
	settingsPath := filepath.Join(t.TempDir(), "settings.xml")
	if err := os.WriteFile(settingsPath, []byte(`<settings>
  <localRepository>`+repository+`</localRepository>
  <mirrors><mirror><id>loopback</id><mirrorOf>*</mirrorOf><url>`+srv.URL+`/maven2</url></mirror></mirrors>
</settings>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := func() string {
		if err := os.RemoveAll(filepath.Join(repository, filepath.Dir(profilerArtifactPath()))); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		asked = nil
		mu.Unlock()
		return settingsPath
	}

	dir := t.TempDir()
	lib, err := FetchProfiler(context.Background(), FetchOptions{Dir: dir, MavenSettings: settings()})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := findProfiler(lib); err != nil || len(got) < 100_000 {
		t.Errorf("unpacked library %s: %d bytes, %v", lib, len(got), err)
	}
	if !slices.Contains(asked, "/maven2/"+profilerArtifactPath()) {
		t.Errorf("the mirror in settings.xml was not asked for the jar: %v", asked)
	}

	// A jar the repository's checksum does not vouch for: Maven refuses it.
	// One it vouches for that is not the pinned jar: perfdoctor refuses it.
	for _, tc := range []struct{ sha1, want string }{
		{sha1Hex(jar), "mvn could not fetch " + ProfilerArtifact},
		{"", "SHA-256"},
	} {
		mu.Lock()
		served, sha1 = append(append([]byte(nil), jar...), 0), tc.sha1
		mu.Unlock()
		empty := t.TempDir()
		_, err := FetchProfiler(context.Background(), FetchOptions{Dir: empty, MavenSettings: settings()})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("tampered jar, repository sha1 %q: %v, want %q", tc.sha1, err, tc.want)
		}
		if ents, _ := os.ReadDir(empty); len(ents) != 0 {
			t.Errorf("wrote %v from a refused jar", ents)
		}
		mu.Lock()
		if !slices.Contains(asked, "/maven2/"+profilerArtifactPath()) {
			t.Errorf("tampered jar, repository sha1 %q: the mirror was not asked for it (a jar kept from an earlier fetch?): %v", tc.sha1, asked)
		}
		mu.Unlock()
	}
	if _, err := FetchProfiler(context.Background(), FetchOptions{Dir: t.TempDir(), Maven: filepath.Join(t.TempDir(), "mvn")}); err == nil || !strings.Contains(err.Error(), "apt-get install maven") {
		t.Errorf("no mvn: %v", err)
	}
}

func sha1Hex(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// skipOrFailInCI skips a test whose tools are missing, except under CI,
// where scripts/test.sh installs them.
func skipOrFailInCI(t *testing.T, why string) {
	t.Helper()
	if ci := strings.ToLower(os.Getenv("CI")); ci != "" && ci != "0" && ci != "false" {
		t.Fatal(why)
	}
	t.Skip("skipped: " + why)
}

// collect --jvm on a real JVM: async-profiler's samples replace JFR's, and
// afterwards the JVM runs neither profiler nor recording. With the itimer
// event the samples hold no kernel frames (casebook/java checks the
// default cpu event's).
func TestCollectWithAsyncProfiler(t *testing.T) {
	jar := profilerJar(t)
	pid := startWorkload(t)
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(context.Background(), Options{PID: pid, Duration: 2 * time.Second, OutDir: out, AsyncProfiler: true, ProfilerLibrary: jar, ProfilerEvent: "itimer", Settle: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if m.Partial || !m.OK(profilerItem) || !m.OK("cpu") || !m.OK("jvm") || !m.OK(settleItem) {
		t.Fatalf("manifest %+v", m)
	}
	for _, f := range []string{"async-profiler.jfr", "async-profiler.log", "recording.jfr"} {
		if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
			t.Errorf("%s kept in the bundle", f)
		}
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ev.JVM.Profiler, "async-profiler "+ProfilerVersion) || ev.JVM.ExecutionSamples == 0 {
		t.Errorf("JVM summary: profiler %q, %d samples", ev.JVM.Profiler, ev.JVM.ExecutionSamples)
	}
	cpu := facts.Read(ev, facts.CPUStacks)
	if cpu.Share(evidence.FuncPrefix("Workload.spin")) == 0 {
		t.Error("Workload.spin missing from async-profiler's CPU samples")
	}
	if kernel := cpu.Share(facts.Read(ev, facts.KernelFrames)); kernel != 0 {
		t.Errorf("itimer samples with kernel frames: %.2f", kernel)
	}
	// As found: no JFR recording left, and the profiler idle.
	if out, _ := exec.Command("jcmd", strconv.Itoa(pid), "JFR.check").CombinedOutput(); !strings.Contains(string(out), "No available recordings") {
		t.Errorf("JFR recordings left running:\n%s", out)
	}
	c := &collection{opt: Options{PID: pid, Logger: slog.New(slog.DiscardHandler)}, jcmd: "jcmd"}
	lib, _, _ := findProfiler(jar)
	path, _ := placeLibrary("/proc", pid, lib)
	status := filepath.Join(t.TempDir(), "status")
	if err := c.agentLoad(context.Background(), &profiler{lib: path, log: status}, "status,file="+status); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(status); !strings.Contains(string(b), "not active") {
		t.Errorf("async-profiler status after collect: %q", b)
	}
}

// With no library to load, collect records with JFR alone and the
// manifest's async-profiler item says why.
func TestCollectFallsBackToJFR(t *testing.T) {
	pid := startWorkload(t)
	t.Setenv(ProfilerEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(context.Background(), Options{PID: pid, Duration: 2 * time.Second, OutDir: out, AsyncProfiler: true})
	if err != nil {
		t.Fatal(err)
	}
	failed := m.Failed()
	if len(failed) != 1 || failed[0].Name != profilerItem || !strings.Contains(failed[0].Error, "JFR alone") ||
		!strings.Contains(failed[0].Error, "fetch-async-profiler") || !m.OK("cpu") {
		t.Fatalf("manifest %+v", m)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	if ev.JVM.Profiler != "" || ev.JVM.ExecutionSamples == 0 {
		t.Errorf("JFR alone: profiler %q, %d samples", ev.JVM.Profiler, ev.JVM.ExecutionSamples)
	}
}
