// Package jvmtest starts JVMs for tests: a Java source compiled with an
// installed JDK and run until the test ends.
package jvmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Start compiles src and runs java with args, using the JDK on PATH, and
// attaches once; the test is skipped when a JDK tool is missing. It
// returns the JVM's process ID; the test's cleanup kills it.
func Start(t testing.TB, src string, args ...string) int {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jcmd", "jfr"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: no %s on PATH (a JDK 17 or later is needed)", tool)
		}
	}
	return StartWith(t, "", src, args...)
}

// StartWith is Start with the JDK whose tools are in bin ("" for PATH's).
func StartWith(t testing.TB, bin, src string, args ...string) int {
	t.Helper()
	tool := func(name string) string { return filepath.Join(bin, name) }
	if bin == "" {
		tool = func(name string) string { return name }
	}
	dir := Classes(t, tool("javac"), src)
	// JFR's repository in the test's directory: the JVM is killed, and a
	// killed JVM leaves it behind.
	cmd := exec.Command(tool("java"), append([]string{"-XX:FlightRecorderOptions:repository=" + t.TempDir(), "-cp", dir}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Attach once, so the tests' timings do not include the JVM's start-up.
	if out, err := exec.Command(tool("jcmd"), strconv.Itoa(cmd.Process.Pid), "VM.version").CombinedOutput(); err != nil {
		t.Fatalf("jcmd: %v\n%s", err, out)
	}
	return cmd.Process.Pid
}

// compiled holds the classes javac wrote, by javac, source and class
// path: a package's tests start several JVMs from few sources
// (collect/jvm's, eight from three; casebook/java's, five from two in CI),
// and a javac run is a JVM's start and a compile (1.8 s of CPU, 1 to 5 s
// on a busy 2-core machine). Cleanup removes the directories.
var compiled struct {
	sync.Mutex
	dirs map[[3]string]string
	root string
}

// Classes compiles src with javac (against the class path's jars) once
// per test binary and returns the directory of its classes, which the
// package's TestMain removes with Cleanup.
func Classes(t testing.TB, javac, src string, classpath ...string) string {
	t.Helper()
	src, _ = filepath.Abs(src)
	compiled.Lock()
	defer compiled.Unlock()
	// By the javac run: PATH's and JDK 17's under /usr/lib/jvm are one.
	cp := strings.Join(classpath, ":")
	key := [3]string{javac, src, cp}
	if path, err := exec.LookPath(javac); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			key[0] = real
		}
	}
	if dir, ok := compiled.dirs[key]; ok {
		return dir
	}
	if compiled.root == "" {
		root, err := os.MkdirTemp("", "perfdoctor-jvm-classes")
		if err != nil {
			t.Fatal(err)
		}
		compiled.root, compiled.dirs = root, map[[3]string]string{}
	}
	dir, err := os.MkdirTemp(compiled.root, "classes")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-d", dir}
	if cp != "" {
		args = append(args, "-cp", cp)
	}
	if out, err := exec.Command(javac, append(args, src)...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	compiled.dirs[key] = dir
	return dir
}

// Cleanup removes the compiled classes; a package whose tests start JVMs
// calls it from TestMain once its tests have run.
func Cleanup() {
	compiled.Lock()
	defer compiled.Unlock()
	if compiled.root != "" {
		os.RemoveAll(compiled.root)
		compiled.root, compiled.dirs = "", nil
	}
}

// Bin is the bin directory of an installed JDK of the major version
// (javac and jfr included), or "" when there is none.
func Bin(major int) string {
	homes, _ := filepath.Glob("/usr/lib/jvm/*")
	if h := os.Getenv("JAVA_HOME"); h != "" {
		homes = append([]string{h}, homes...)
	}
	want := fmt.Sprintf("JAVA_VERSION=\"%d", major)
	for _, h := range homes {
		rel, err := os.ReadFile(filepath.Join(h, "release"))
		if err != nil || !strings.Contains(string(rel), want+"\"") && !strings.Contains(string(rel), want+".") {
			continue
		}
		bin := filepath.Join(h, "bin")
		if _, err := os.Stat(filepath.Join(bin, "javac")); err == nil {
			if _, err := os.Stat(filepath.Join(bin, "jfr")); err == nil {
				return bin
			}
		}
	}
	return ""
}

// Need returns Bin(major), skipping the test without one (failing under
// CI, whose machine image has JDK 17 and Temurin 25).
func Need(t testing.TB, major int) string {
	t.Helper()
	bin := Bin(major)
	if bin == "" {
		if ci := strings.ToLower(os.Getenv("CI")); ci != "" && ci != "0" && ci != "false" {
			t.Fatalf("CI is set and no JDK %d is installed under /usr/lib/jvm", major)
		}
		t.Skipf("skipped: no JDK %d under /usr/lib/jvm or JAVA_HOME", major)
	}
	return bin
}
