package facts_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
)

func TestSplitArgsUndoesTheStoredQuoting(t *testing.T) {
	got := facts.SplitArgs(`/usr/bin/svc -a=1  "--name=two words" "say \"hi\"" -b`)
	want := []string{"/usr/bin/svc", "-a=1", "--name=two words", `say "hi"`, "-b"}
	if !slices.Equal(got, want) {
		t.Errorf("SplitArgs = %q, want %q", got, want)
	}
}

func TestSettingKeyMeetsRelaxedForms(t *testing.T) {
	for _, name := range []string{"--spring.datasource.hikari.maximum-pool-size", "spring.datasource.hikari.maximumPoolSize", "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE"} {
		if k := facts.SettingKey(name); k != "spring.datasource.hikari.maximumpoolsize" {
			t.Errorf("SettingKey(%q) = %q", name, k)
		}
	}
	if k := facts.SettingKey("-search.disableCache"); k != "search.disablecache" {
		t.Errorf("SettingKey = %q", k)
	}
}

// A Go server's command line from /proc, as collect stores it, and its
// Go tuning variables.
func TestConfigurationOfAGoServer(t *testing.T) {
	ev := testsys.Evidence(t, "e2-bad", func(start, end *bundle.SystemSnapshot) {
		for _, s := range []*bundle.SystemSnapshot{start, end} {
			s.Process.Cmdline = "/opt/vm/victoria-metrics -httpListenAddr=127.0.0.1:8428 -search.disableCache --log-level debug -retentionPeriod=100y"
			s.Process.Executable = "/opt/vm/victoria-metrics"
			s.Process.GoEnv = map[string]string{"GOGC": "20"}
		}
	})
	c := facts.Read(ev, facts.Configuration)
	if c.Program != "victoria-metrics" {
		t.Errorf("program %q", c.Program)
	}
	off, ok := c.Last("search.disablecache")
	if !ok || !off.Alone || off.Written() != "-search.disableCache" {
		t.Errorf("disableCache: %+v %v", off, ok)
	}
	if v, isBool := off.Bool(); !v || !isBool {
		t.Errorf("a flag alone reads as true: %v %v", v, isBool)
	}
	lvl, ok := c.Last("loglevel")
	if !ok || !lvl.Alone || lvl.Next != "debug" {
		t.Errorf("--log-level debug: %+v", lvl)
	}
	gogc, ok := c.Last("gogc")
	if !ok || gogc.Source != facts.SourceEnv || gogc.Written() != "GOGC=20" {
		t.Errorf("GOGC: %+v", gogc)
	}
	if !slices.Contains(c.Read, "the command line (/proc)") || !slices.Contains(c.Read, "the Go tuning variables of the environment (/proc)") {
		t.Errorf("read %q", c.Read)
	}
}

// A java command line from /proc: the JVM's options, the main class, then
// the application's arguments (Spring Boot's --name=value among them).
func TestConfigurationOfAJavaCommandLine(t *testing.T) {
	ev := testsys.Evidence(t, "e2-bad", func(start, end *bundle.SystemSnapshot) {
		for _, s := range []*bundle.SystemSnapshot{start, end} {
			s.Process.Cmdline = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java -Xms512m -Xmx512m -XX:+UseSerialGC -Dlog4j2.level=DEBUG -cp app.jar:lib/* com.acme.Main --logging.level.root=DEBUG --server.tomcat.threads.max=2"
			s.Process.Executable = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
			s.Process.GoEnv = nil
		}
	})
	c := facts.Read(ev, facts.Configuration)
	if c.Program != "com.acme.Main" {
		t.Errorf("program %q", c.Program)
	}
	want := map[string]string{"xmx": "512m", "useserialgc": "true", "log4j2.level": "DEBUG", "logging.level.root": "DEBUG", "server.tomcat.threads.max": "2"}
	for key, value := range want {
		if s, ok := c.Last(key); !ok || s.Value != value {
			t.Errorf("%s: %+v (found %v)", key, s, ok)
		}
	}
	if s, _ := c.Last("xmx"); s.Written() != "-Xmx512m" || s.Source != facts.SourceJVMOption {
		t.Errorf("-Xmx written %q from %s", s.Written(), s.Source)
	}
	if s, _ := c.Last("logging.level.root"); s.Source != facts.SourceArgs {
		t.Errorf("Spring's argument read as %s", s.Source)
	}
	if slices.ContainsFunc(c.Settings, func(s facts.Setting) bool { return s.Key == "cp" || s.Value == "app.jar:lib/*" }) {
		t.Errorf("the class path is not a setting: %+v", c.Settings)
	}
}

// A JFR recording's summary gives the JVM's options and arguments.
func TestConfigurationOfARecordedJVM(t *testing.T) {
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, "../corpus/jvm-springboot-debug-logging/bad")
	if err != nil {
		t.Fatal(err)
	}
	c := facts.Read(ev, facts.Configuration)
	if c.Program != "boot-items.jar" {
		t.Errorf("program %q", c.Program)
	}
	if s, ok := c.Last("logging.level.root"); !ok || s.Value != "DEBUG" || s.Written() != "--logging.level.root=DEBUG" {
		t.Errorf("logging.level.root: %+v", s)
	}
	if s, ok := c.Last("xmx"); !ok || s.Value != "512m" {
		t.Errorf("-Xmx: %+v", s)
	}
	for _, s := range c.Settings {
		if s.Source == facts.SourceProperty && (s.Key == "java.home" || s.Key == "sun.java.command") {
			t.Errorf("the JDK's own property %s is not configuration", s.Name)
		}
	}
}

func TestNothingSeenIsNothingClaimed(t *testing.T) {
	c := facts.Read(evidence.NewBuilder("empty").Evidence(), facts.Configuration)
	if len(c.Settings) != 0 || len(c.Read) != 0 || c.Program != "" {
		t.Errorf("empty evidence: %+v", c)
	}
}

// Outside a java launcher's options, -D is a program's own switch unless
// it sets name=value: nats-server's -DV turns debug and trace logging on.
func TestDashDIsASwitchWithoutAValue(t *testing.T) {
	ev := testsys.Evidence(t, "e2-bad", func(start, end *bundle.SystemSnapshot) {
		for _, s := range []*bundle.SystemSnapshot{start, end} {
			s.Process.Cmdline = "/opt/nats-server -p 4222 -DV -Dmode=fast -D"
			s.Process.Executable = "/opt/nats-server"
		}
	})
	c := facts.Read(ev, facts.Configuration)
	if s, ok := c.Last("dv"); !ok || !s.Alone || s.Source != facts.SourceArgs || s.Written() != "-DV" {
		t.Errorf("-DV: %+v %v", s, ok)
	}
	if s, ok := c.Last("mode"); !ok || s.Value != "fast" || s.Source != facts.SourceProperty {
		t.Errorf("-Dmode=fast: %+v %v", s, ok)
	}
	if s, ok := c.Last("d"); !ok || !s.Alone || s.Source != facts.SourceArgs {
		t.Errorf("-D: %+v %v", s, ok)
	}
}

// A server's configuration file, as collect stores it beside the command
// line: its settings first (the command line overrides them), each with
// its file, section and line.
func TestConfigurationOfAServerFile(t *testing.T) {
	ev := testsys.Evidence(t, "e2-bad", func(start, end *bundle.SystemSnapshot) {
		for _, s := range []*bundle.SystemSnapshot{start, end} {
			s.Process.Cmdline = "mariadbd --defaults-file=/w/bad/my.cnf --max-connections=300"
			s.Process.Executable = "/usr/sbin/mariadbd"
			s.Process.GoEnv = nil
		}
	})
	ev.ConfigFiles = &bundle.ConfigFiles{Program: "mariadbd", Files: []bundle.ConfigFile{
		{Path: "/w/bad/my.cnf", Named: "--defaults-file", Format: "mysql", Content: "[client]\nport=1\n[mariadbd]\nmax_connections=151\ninnodb_buffer_pool_size=6M\n"},
		{Path: "/w/extra.cnf", Named: "--defaults-extra-file", Format: "mysql", Error: "open /w/extra.cnf: no such file or directory"},
	}}
	c := facts.Read(ev, facts.Configuration)
	pool, ok := c.Last("innodb.buffer.pool.size")
	if !ok || pool.Value != "6M" || pool.Source != facts.SourceFile || pool.Where() != "/w/bad/my.cnf, [mariadbd], line 5" {
		t.Errorf("innodb_buffer_pool_size: %+v", pool)
	}
	if mc, _ := c.Last("max.connections"); mc.Value != "300" || mc.Source != facts.SourceArgs {
		t.Errorf("the command line overrides the file: %+v", mc)
	}
	if _, ok := c.Last("port"); ok {
		t.Error("a [client] option read as the server's")
	}
	if !slices.Contains(c.Read, "mariadbd's configuration file /w/bad/my.cnf (--defaults-file)") ||
		!slices.ContainsFunc(c.Read, func(r string) bool { return strings.Contains(r, "/w/extra.cnf: not read (open") }) {
		t.Errorf("read %q", c.Read)
	}
}
