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
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// async-profiler (github.com/async-profiler/async-profiler) samples CPU
// with the VM's own frames, native and kernel frames besides Java's, where
// JFR's execution sampler sees Java frames only and skips threads inside
// the VM (an exception's stack walk, for one). Its library ships in the
// Maven artifact tools.profiler:async-profiler, one per platform.
const (
	// ProfilerVersion is the async-profiler release perfdoctor pins.
	ProfilerVersion = "4.6"
	// ProfilerArtifact is the jar's Maven coordinates.
	ProfilerArtifact = "tools.profiler:async-profiler:" + ProfilerVersion
	// ProfilerJarSHA256 is the checksum of async-profiler-4.6.jar as Maven
	// Central serves it (scripts/test.sh pins the same).
	ProfilerJarSHA256 = "a5d3d9f4582c2033fa9db518046e73ef97219801f3e7542b82e3e09261ebe493"
	// ProfilerEnv names the library (or the jar) when no flag does.
	ProfilerEnv = "PERFDOCTOR_ASYNC_PROFILER"
	// profilerLimit bounds the library read from a file or jar entry.
	profilerLimit = 16 << 20
)

// ProfilerCache is the directory FetchProfiler fills and collect --jvm
// looks in when neither a flag nor $PERFDOCTOR_ASYNC_PROFILER names the
// library: $XDG_CACHE_HOME/perfdoctor/async-profiler/VERSION (~/.cache/...).
func ProfilerCache() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for async-profiler: %w", err)
	}
	return filepath.Join(dir, "perfdoctor", "async-profiler", ProfilerVersion), nil
}

// platform is the directory of the jar holding this machine's library.
func platform() (string, error) {
	switch runtime.GOARCH {
	case "amd64":
		return "linux-x64", nil
	case "arm64":
		return "linux-arm64", nil
	}
	return "", fmt.Errorf("async-profiler ships no library for linux/%s", runtime.GOARCH)
}

// libraryName is the library's file name in the jar and the cache.
const libraryName = "libasyncProfiler.so"

// findProfiler reads async-profiler's library from path, a
// libasyncProfiler.so or a jar holding one per platform; an empty path
// means $PERFDOCTOR_ASYNC_PROFILER, else the cache. It returns the
// library's bytes and where they came from.
func findProfiler(path string) ([]byte, string, error) {
	if runtime.GOOS != "linux" {
		return nil, "", fmt.Errorf("async-profiler is loaded on Linux only, not %s", runtime.GOOS)
	}
	plat, err := platform()
	if err != nil {
		return nil, "", err
	}
	if path == "" {
		path = os.Getenv(ProfilerEnv)
	}
	if path == "" {
		dir, err := ProfilerCache()
		if err != nil {
			return nil, "", err
		}
		path = filepath.Join(dir, plat, libraryName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("no async-profiler library: run `perfdoctor fetch-async-profiler` once, or name libasyncProfiler.so or its jar with --async-profiler or $%s", ProfilerEnv)
		}
	}
	lib, err := readLibrary(path, plat)
	if err != nil {
		return nil, "", err
	}
	return lib, path, nil
}

// readLibrary reads the library at path, or the platform's entry when
// path is a jar (a zip).
func readLibrary(path, plat string) ([]byte, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("async-profiler library: %w", err)
	}
	if !bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		if !bytes.HasPrefix(data, []byte("\x7fELF")) {
			return nil, fmt.Errorf("async-profiler library %s is neither a shared library nor a jar", path)
		}
		return data, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("async-profiler jar %s: %w", path, err)
	}
	lib, err := readEntry(zr, plat+"/"+libraryName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lib, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4*profilerLimit))
}

// placeLibrary copies the library into the target's /tmp (through
// /proc/PID/root, readable by all, so a JVM running as another user can
// load it) and returns its path as the JVM sees it.
// The name holds the library's checksum: a later collection loads the same
// file, which the JVM already has mapped, rather than a second copy of the
// profiler. The file is left in place for that reason; it is 0.6 MB.
func placeLibrary(procRoot string, pid int, lib []byte) (string, error) {
	sum := sha256.Sum256(lib)
	name := "perfdoctor-async-profiler-" + hex.EncodeToString(sum[:8]) + ".so"
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "root", "tmp")
	dest := filepath.Join(dir, name)
	if st, err := os.Lstat(dest); err == nil && st.Mode().IsRegular() && ownedByUs(st) {
		if have, err := readLimited(dest); err == nil && bytes.Equal(have, lib) {
			return "/tmp/" + name, nil
		}
	}
	if err := writeFileAtomic(dest, lib); err != nil {
		return "", fmt.Errorf("copying async-profiler into the target's /tmp: %w", err)
	}
	return "/tmp/" + name, nil
}

func ownedByUs(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Geteuid()
}

// profiler is async-profiler loaded into the target for one recording.
type profiler struct {
	lib      string // the library's path in the target
	out, log string // its recording and its log, as the JVM writes them
	event    string // "cpu" or "itimer"
	interval time.Duration
	took     time.Duration // loading, starting and stopping it
}

// startOptions are the agent's options: CPU time sampled every interval
// with Java, VM, native and (for event cpu) kernel frames (cstack=vm walks
// the VM's own structures, so no frame pointers are needed), an
// allocation sample every 512 KiB, lock waits over 10 ms in total,
// written as JFR.
func (p *profiler) startOptions() string {
	return fmt.Sprintf("start,event=%s,interval=%dus,cstack=vm,alloc=512k,lock=10ms,jfr,file=%s,log=%s", p.event, p.interval.Microseconds(), p.out, p.log)
}

// agentLoad runs JVMTI.agent_load with the agent's options. jcmd would
// split options holding '=' into arguments of its own: quoted, they reach
// the agent whole. The agent's errors go to its log, not to jcmd's reply,
// which says only "return code: N".
func (c *collection) agentLoad(ctx context.Context, p *profiler, options string) error {
	out, err := c.cmd(ctx, "JVMTI.agent_load", p.lib, strconv.Quote(options))
	if err != nil {
		return err
	}
	switch code := returnCode(out); {
	case code == 0:
		return nil
	case code < 0: // the JVM refused: no dynamic loading, a library it cannot open
		return fmt.Errorf("the JVM did not load async-profiler: %s", lastLine(out))
	default:
		msg := "the agent refused to start"
		if b, err := os.ReadFile(p.log); err == nil && lastLogError(string(b)) != "" {
			msg = lastLogError(string(b))
		}
		return fmt.Errorf("async-profiler: %s (return code %d)", msg, code)
	}
}

// returnCode reads jcmd's "return code: N" reply to JVMTI.agent_load; a
// reply without one (the JVM refused to load the agent) is -1.
func returnCode(out string) int {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "return code:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// lastLogError is the last "[ERROR] ..." line of async-profiler's log.
func lastLogError(log string) string {
	var msg string
	for _, l := range strings.Split(log, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "[ERROR] "); ok {
			msg = m
		}
	}
	return msg
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}

// profilerReplaces turns off the JFR events async-profiler records in
// their place, so the JVM does not pay for two samplers.
var profilerReplaces = []string{
	"jdk.ExecutionSample#enabled=false", "jdk.NativeMethodSample#enabled=false",
	"jdk.ObjectAllocationSample#enabled=false", "jdk.ObjectAllocationInNewTLAB#enabled=false",
	"jdk.ObjectAllocationOutsideTLAB#enabled=false",
	"jdk.JavaMonitorEnter#enabled=false", "jdk.ThreadPark#enabled=false",
}

// profilerItem is the manifest item saying whether async-profiler ran.
const profilerItem = "async-profiler"

// startProfiler loads async-profiler and starts it. When it cannot, it
// records why as a failed item and returns nil: JFR records alone.
func (c *collection) startProfiler(ctx context.Context) *profiler {
	t0 := time.Now()
	p, err := c.loadProfiler(ctx)
	if err != nil {
		c.w.Written(profilerItem, "", time.Since(t0), fmt.Errorf("recorded with JFR alone: %w", err))
		c.opt.Logger.Info("async-profiler not loaded; recording with JFR alone", "err", err) // the manifest item says it on stderr
		return nil
	}
	p.took = time.Since(t0)
	c.opt.Logger.Info("async-profiler started", "library", p.lib, "took", p.took)
	return p
}

func (c *collection) loadProfiler(ctx context.Context) (*profiler, error) {
	lib, from, err := findProfiler(c.opt.ProfilerLibrary)
	if err != nil {
		return nil, err
	}
	procRoot := c.opt.Roots.Proc
	if procRoot == "" {
		procRoot = "/proc"
	}
	path, err := placeLibrary(procRoot, c.opt.PID, lib)
	if err != nil {
		return nil, err
	}
	c.opt.Logger.Debug("async-profiler library", "from", from, "in target", path)
	// The JVM writes the recording and the log, so they need absolute paths.
	out, err := filepath.Abs(c.w.Path("async-profiler.jfr"))
	if err != nil {
		return nil, err
	}
	p := &profiler{lib: path, out: out, log: strings.TrimSuffix(out, ".jfr") + ".log", event: c.opt.ProfilerEvent, interval: 10 * time.Millisecond}
	c.opt.Progress.Update("loading async-profiler into process %d", c.opt.PID)
	if err := c.agentLoad(ctx, p, p.startOptions()); err != nil {
		if ctx.Err() != nil { // jcmd was stopped midway: the profiler may have started
			stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.stopProfiler(stop, p)
		}
		os.Remove(p.out)
		os.Remove(p.log)
		return nil, err
	}
	return p, nil
}

// stopProfiler stops sampling and recording: the library stays mapped (a
// JVM cannot unload an agent) but idle, its status "not active".
func (c *collection) stopProfiler(ctx context.Context, p *profiler) error {
	t0 := time.Now()
	err := c.agentLoad(ctx, p, "stop,log="+p.log)
	p.took += time.Since(t0)
	if err != nil {
		c.opt.Logger.Warn("stopping async-profiler", "err", err)
	}
	return err
}

// useProfiler reads async-profiler's recording into rec (JFR's, nil when
// JFR's dump failed): its CPU, allocation and lock samples replace the
// events JFR was told not to record. Its raw recording is not kept: like
// JFR's, it holds system properties.
func (c *collection) useProfiler(rec *jfr.Recording, p *profiler, stopErr error, window jfr.Window) {
	defer os.Remove(p.out)
	defer os.Remove(p.log)
	err := stopErr
	var ap *jfr.Recording
	if err == nil {
		ap, err = jfr.ReadFileWindow(p.out, window)
	}
	if err == nil && rec != nil {
		rec.CPU, rec.Allocs, rec.Monitor = ap.CPU, ap.Allocs, ap.Monitor
		rec.JVM.ExecutionSamples = ap.JVM.ExecutionSamples
		rec.JVM.Profiler = ap.JVM.Profiler
	}
	c.w.Written(profilerItem, "", p.took, err)
}
