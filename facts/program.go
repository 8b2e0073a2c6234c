package facts

import (
	"regexp"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
)

// ProgramCode tells the program's own functions from the runtime, the
// libraries and the frameworks it runs on: where a request's work starts
// (its handler) and which frame calls into a dependency. A third-party
// server's own code is the program's code too: the pushgateway's storage,
// H2's query engine, Jetty's request handling when Jetty is the program.
type ProgramCode struct {
	// Basis says how the program's code was told apart, for reports.
	Basis  string
	owners *CodeOwners
	system evidence.Matcher
	// javaOwn are the JVM framework families that are the program itself,
	// from its command line (Jetty's start.jar, Tomcat's Bootstrap).
	javaOwn []string
	jvm     bool
}

// Program is the program's own code in the evidence.
var Program = &Fact[*ProgramCode]{
	Name: "program-code",
	Doc: "Which functions are the program's own code: the main module's for Go (code-owners), the main binary's for a native " +
		"program (not the kernel's, a shared library's or an unsymbolized frame), Java classes outside the JDK and the common " +
		"libraries and frameworks for the JVM, unless the command line shows the framework is the program (Jetty, Tomcat).",
	Requires: []Key{Owners, SystemFrames, CPUStacks},
	Compute: func(p *Pass) *ProgramCode {
		pc := &ProgramCode{owners: Get(p, Owners), system: Get(p, SystemFrames)}
		pc.jvm = p.Evidence.JVM != nil || p.Evidence.Platform() != evidence.PlatformGo && runsJava(Get(p, CPUStacks))
		switch {
		case p.Evidence.JVM != nil:
			cmd := p.Evidence.JVM.JavaArguments
			if cmd == "" {
				cmd = p.Evidence.JVM.Properties["sun.java.command"]
			}
			main, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
			for _, fw := range javaFrameworks {
				for _, m := range fw.markers {
					if main != "" && strings.Contains(strings.ToLower(main), m) {
						pc.javaOwn = append(pc.javaOwn, fw.prefixes...)
						pc.Basis = "Java classes outside the JDK and common libraries; " + fw.name + " is the program (its command line runs " + main + ")"
						break
					}
				}
			}
			if pc.Basis == "" {
				pc.Basis = "Java classes outside the JDK and the common libraries and frameworks"
			}
		case pc.owners.Main != "":
			pc.Basis = "the main module " + pc.owners.Main + " (" + pc.owners.Source + ")"
		default:
			pc.Basis = "functions outside the runtime, the standard library, the kernel and shared libraries"
		}
		return pc
	},
}

// Own reports whether f is the program's own code.
func (pc *ProgramCode) Own(f evidence.Frame) bool {
	fn := f.Func
	if fn == "" || frames.Unsymbolized(fn) {
		return false
	}
	if pc.jvm {
		// Kernel and libjvm frames in async-profiler's stacks are not the
		// program's; GCC's clones ("finish_task_switch.isra.0") look like
		// Java names.
		if !evidence.IsJava(fn) || evidence.IsJDK(fn) || gccClone.MatchString(fn) {
			return false
		}
		for _, p := range pc.javaOwn {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
		for _, fw := range javaFrameworks {
			for _, p := range fw.prefixes {
				if strings.HasPrefix(fn, p) {
					return false
				}
			}
		}
		return true
	}
	if pc.system != nil && pc.system(fn) {
		return false // the kernel, the vDSO, libc and other shared libraries
	}
	switch pc.owners.Of(f).Owner {
	case OwnerMain:
		return true
	case OwnerUnknown:
		// Nothing tells the main module from its dependencies (a native
		// binary, a profile without build info or module paths): every
		// function outside the runtime and standard library is a candidate.
		return !evidence.IsRuntime(fn) && !evidence.IsStdlib(fn)
	}
	return false
}

// Application reports whether f is application code at all: the program's
// own or a library's or framework's it runs on, not the runtime's, the
// standard library's, the JDK's, the kernel's or a shared library's.
func (pc *ProgramCode) Application(f evidence.Frame) bool {
	fn := f.Func
	switch {
	case fn == "" || frames.Unsymbolized(fn):
		return false
	case pc.jvm:
		return evidence.IsJava(fn) && !evidence.IsJDK(fn) && !gccClone.MatchString(fn)
	case pc.system != nil && pc.system(fn):
		return false
	}
	return !evidence.IsRuntime(fn) && !evidence.IsStdlib(fn)
}

// gccClone matches the suffixes GCC gives a function's specialised copies.
var gccClone = regexp.MustCompile(`\.(isra|part|constprop|cold|lto_priv)\.\d+`)

// Frames marks which of st's frames are the program's own code, indexed
// as st.Frames.
func (pc *ProgramCode) Frames(st *evidence.Stacks) []bool {
	if st == nil {
		return nil
	}
	own := make([]bool, len(st.Frames))
	for i, f := range st.Frames {
		own[i] = pc.Own(f)
	}
	return own
}

// runsJava reports whether a profile's stacks are a JVM's (a folded or
// converted profile without the recording's summary): Java's own thread
// entry is on them.
func runsJava(st *evidence.Stacks) bool {
	if st == nil {
		return false
	}
	for _, fn := range st.Funcs {
		if strings.HasPrefix(fn, "java.lang.Thread.run") {
			return true
		}
	}
	return false
}

// javaFramework is a library or framework family a JVM application runs
// on: not the application's own code, unless the command line says the
// framework is the program.
type javaFramework struct {
	name     string
	prefixes []string
	// markers, in the lower-cased main class or jar path, say the
	// framework is the program.
	markers []string
}

var javaFrameworks = []javaFramework{
	{"Tomcat", []string{"org.apache.catalina.", "org.apache.coyote.", "org.apache.tomcat.", "org.apache.jasper.", "org.apache.naming.", "org.apache.juli."}, []string{"org.apache.catalina", "tomcat"}},
	{"Jetty", []string{"org.eclipse.jetty."}, []string{"org.eclipse.jetty", "jetty"}},
	{"Netty", []string{"io.netty."}, nil},
	{"Undertow", []string{"io.undertow.", "org.xnio."}, []string{"io.undertow"}},
	{"Spring", []string{"org.springframework."}, nil},
	{"Jakarta EE APIs", []string{"jakarta."}, nil},
	{"logging", []string{"ch.qos.logback.", "org.apache.logging.log4j.", "org.apache.log4j.", "org.slf4j."}, nil},
	{"JSON and XML", []string{"com.fasterxml.jackson.", "tools.jackson.", "com.google.gson.", "org.codehaus."}, nil},
	{"JDBC drivers and pools", []string{"com.zaxxer.hikari.", "org.postgresql.", "com.mysql.", "org.mariadb.", "org.hibernate.", "org.apache.commons.dbcp"}, nil},
	{"common libraries", []string{"com.google.common.", "org.apache.commons.", "kotlin.", "kotlinx.", "scala.", "io.micrometer.", "io.opentelemetry.", "reactor.", "io.vertx.", "org.glassfish.", "org.jboss."}, nil},
}
