package jvm

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FetchOptions say where FetchProfiler gets the pinned async-profiler jar.
type FetchOptions struct {
	// From is the jar itself: a file path, or an http(s) URL of the jar or
	// of a Maven repository's root (the artifact's path is appended).
	// Empty means Maven's own client, which resolves the artifact through
	// the user's settings.xml (mirrors, proxies, credentials) and checks
	// the repository's checksums.
	From string
	// Dir is where the libraries are unpacked; empty means ProfilerCache.
	Dir string
	// Maven is the mvn executable; empty looks up mvn in PATH.
	Maven string
	// MavenSettings is a settings.xml for mvn -s; empty means Maven's own
	// default (~/.m2/settings.xml).
	MavenSettings string
	// Client fetches an http(s) From; nil means a default client.
	Client *http.Client
	Logger *slog.Logger
}

// FetchProfiler gets the pinned async-profiler jar (through Maven unless
// opt.From names it), checks its SHA-256 against the pinned one and
// unpacks its Linux libraries into opt.Dir, where collect --jvm finds
// them. It returns this machine's library. Nothing is written unless the
// checksum matches.
func FetchProfiler(ctx context.Context, opt FetchOptions) (string, error) {
	dir := opt.Dir
	if dir == "" {
		var err error
		if dir, err = ProfilerCache(); err != nil {
			return "", err
		}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	jar, from, err := readProfilerJar(ctx, opt)
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(jar); hex.EncodeToString(sum[:]) != ProfilerJarSHA256 {
		return "", fmt.Errorf("%s: SHA-256 %x, want %s (async-profiler %s as its Maven artifact %s holds it)", from, sum, ProfilerJarSHA256, ProfilerVersion, ProfilerArtifact)
	}
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		return "", fmt.Errorf("async-profiler jar: %w", err)
	}
	for _, plat := range []string{"linux-x64", "linux-arm64"} {
		lib, err := readEntry(zr, plat+"/"+libraryName)
		if err != nil {
			return "", err
		}
		if err := writeFileAtomic(filepath.Join(dir, plat, libraryName), lib); err != nil {
			return "", err
		}
	}
	plat, err := platform()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, plat, libraryName), nil
}

// readProfilerJar reads the jar from where opt says, and names the source
// for messages.
func readProfilerJar(ctx context.Context, opt FetchOptions) ([]byte, string, error) {
	from := opt.From
	switch {
	case from == "":
		return mavenProfilerJar(ctx, opt)
	case strings.HasPrefix(from, "http://"), strings.HasPrefix(from, "https://"):
		return downloadProfilerJar(ctx, opt.Client, from)
	}
	jar, err := readLimited(from)
	if err != nil {
		return nil, "", fmt.Errorf("async-profiler jar: %w", err)
	}
	return jar, from, nil
}

// downloadProfilerJar fetches raw, the jar's URL or a Maven repository
// root under which the artifact's path is appended.
func downloadProfilerJar(ctx context.Context, client *http.Client, raw string) ([]byte, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("--from %q is neither a file nor an http(s) URL", raw)
	}
	if !strings.HasSuffix(u.Path, ".jar") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + profilerArtifactPath()
	}
	shown := u.Redacted()
	if client == nil {
		client = &http.Client{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold credentials
		}
		return nil, "", fmt.Errorf("downloading async-profiler from %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("downloading async-profiler from %s: %s", shown, resp.Status)
	}
	jar, err := io.ReadAll(io.LimitReader(resp.Body, 4*profilerLimit))
	if err != nil {
		return nil, "", fmt.Errorf("downloading async-profiler from %s: %w", shown, err)
	}
	return jar, shown, nil
}

// profilerArtifactPath is the jar's path in a Maven repository's layout.
func profilerArtifactPath() string {
	return fmt.Sprintf("tools/profiler/async-profiler/%s/async-profiler-%s.jar", ProfilerVersion, ProfilerVersion)
}

// mavenDependencyPlugin runs the copy: pinned, so every machine resolves
// the same plugin (Maven's built-in default is a 2013 release).
const mavenDependencyPlugin = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

// MavenCopy resolves artifact (group:name:version[:type]) with Maven's
// own client into dir and returns the file's path: through the
// repositories and mirrors of the user's settings (or settings, for mvn
// -s), failing on a checksum the repository does not vouch for.
func MavenCopy(ctx context.Context, mvn, settings, artifact, dir string) (string, error) {
	if mvn == "" {
		mvn = "mvn"
	}
	path, err := exec.LookPath(mvn)
	if err != nil {
		return "", errors.New("mvn (Apache Maven) is not installed: install it (Debian: apt-get install maven), or give the jar with --from PATH|URL")
	}
	args := []string{"-B", "-q", "--strict-checksums", "-Dstyle.color=never"}
	if settings != "" {
		args = append(args, "-s", settings)
	}
	args = append(args, mavenDependencyPlugin+":copy", "-Dartifact="+artifact, "-DoutputDirectory="+dir)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir // no pom.xml there: the copy runs outside any project
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("mvn: %w", ctx.Err())
		}
		return "", fmt.Errorf("mvn could not fetch %s: %s", artifact, mavenError(string(out), err))
	}
	parts := strings.Split(artifact, ":")
	if len(parts) < 3 {
		return "", fmt.Errorf("artifact %q: want group:name:version", artifact)
	}
	typ := "jar"
	if len(parts) > 3 {
		typ = parts[3]
	}
	file := filepath.Join(dir, parts[1]+"-"+parts[2]+"."+typ)
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("mvn reported success but wrote no %s", filepath.Base(file))
	}
	return file, nil
}

// mavenError is the line of mvn's output that says what failed: its
// first "[ERROR]" line, without the advice that follows.
func mavenError(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, "\x1b[0m", ""))
		if m, ok := strings.CutPrefix(l, "[ERROR] "); ok && strings.TrimSpace(m) != "" && !strings.HasPrefix(m, "->") {
			return m
		}
	}
	return err.Error()
}

// mavenProfilerJar fetches the jar through mvn into a scratch directory.
func mavenProfilerJar(ctx context.Context, opt FetchOptions) ([]byte, string, error) {
	tmp, err := os.MkdirTemp("", "perfdoctor-mvn-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	opt.Logger.Info("fetching async-profiler through Maven", "artifact", ProfilerArtifact)
	file, err := MavenCopy(ctx, opt.Maven, opt.MavenSettings, ProfilerArtifact+":jar", tmp)
	if err != nil {
		return nil, "", err
	}
	jar, err := readLimited(file)
	if err != nil {
		return nil, "", fmt.Errorf("async-profiler jar: %w", err)
	}
	return jar, "Maven artifact " + ProfilerArtifact, nil
}

func readEntry(zr *zip.Reader, name string) ([]byte, error) {
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("the async-profiler jar has no %s", name)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, profilerLimit))
}

// writeFileAtomic writes data readable by all (a JVM run by another user
// loads the library) under a new random name, renamed over path: never
// written through a link someone else left at path.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close(), os.Chmod(f.Name(), 0o644), os.Rename(f.Name(), path)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
