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
	"net/http"
	"os"
	"path/filepath"
)

// MavenCentral is the root FetchProfiler downloads from by default.
const MavenCentral = "https://repo1.maven.org/maven2"

// FetchProfiler downloads the pinned async-profiler jar from base (Maven
// Central's root, or a mirror's), checks its SHA-256 against the pinned
// one and unpacks its Linux libraries into dir (ProfilerCache when empty),
// where collect --jvm finds them. It returns this machine's library.
// Nothing is written unless the checksum matches.
func FetchProfiler(ctx context.Context, client *http.Client, base, dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = ProfilerCache(); err != nil {
			return "", err
		}
	}
	url := ProfilerJarURL(base)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("downloading async-profiler: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("downloading %s: %s", url, resp.Status)
	}
	jar, err := io.ReadAll(io.LimitReader(resp.Body, 4*profilerLimit))
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", url, err)
	}
	if sum := sha256.Sum256(jar); hex.EncodeToString(sum[:]) != ProfilerJarSHA256 {
		return "", fmt.Errorf("%s: SHA-256 %x, want %s (async-profiler %s as Maven Central serves it)", url, sum, ProfilerJarSHA256, ProfilerVersion)
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
