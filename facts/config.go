package facts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// Where a setting was read.
const (
	// SourceArgs is the program's own command line: flags and arguments
	// (a JVM's application arguments after its main class or jar).
	SourceArgs = "command line"
	// SourceJVMOption is a JVM option: -Xmx, -XX:..., --add-opens.
	SourceJVMOption = "JVM option"
	// SourceProperty is a JVM system property (-Dname=value, or read by
	// JFR from the running JVM).
	SourceProperty = "system property"
	// SourceEnv is one of the Go runtime's tuning variables of the
	// environment (GOGC, GOMEMLIMIT, GOMAXPROCS, GODEBUG): the only
	// variables perfdoctor reads, since the environment often holds secrets.
	SourceEnv = "environment"
)

// Setting is one configuration value the process was started with, as it
// was written: a flag, a JVM option, a system property, an argument or a Go
// tuning variable.
type Setting struct {
	// Name is the setting as written without its value: "-search.disableCache",
	// "--logging.level.root", "-Dlog4j2.level", "-Xmx", "GOGC".
	Name string `json:"name"`
	// Key is Name normalised for matching (SettingKey): "search.disablecache",
	// "logging.level.root".
	Key string `json:"key"`
	// Value is what follows "=" (or the size after -Xmx); "" for a flag
	// given alone.
	Value string `json:"value,omitempty"`
	// Alone marks a flag given without "=": a boolean, or one whose value is
	// the next argument (Next) when it takes one. Which, only the program
	// knows.
	Alone bool   `json:"alone,omitempty"`
	Next  string `json:"next,omitempty"`
	// Source says where it was read: SourceArgs, SourceJVMOption,
	// SourceProperty, SourceEnv or SourceFile.
	Source string `json:"source"`
	// File, Section and Line say where a SourceFile setting is: the
	// file's path as the process sees it, the section or block it is in
	// ("mariadbd", "pgbouncer", "http server"; "" at the top) and its
	// line; Text is the line as written, without its comment.
	File    string `json:"file,omitempty"`
	Section string `json:"section,omitempty"`
	Line    int    `json:"line,omitempty"`
	Text    string `json:"text,omitempty"`
}

// Where says where a setting was read: "/etc/mysql/my.cnf, [mariadbd],
// line 9" for a file's, else its source ("command line").
func (s Setting) Where() string {
	if s.Source != SourceFile {
		return s.Source
	}
	w := s.File
	if s.Section != "" {
		w += ", [" + s.Section + "]"
	}
	if s.Line > 0 {
		w += fmt.Sprintf(", line %d", s.Line)
	}
	return w
}

// Written is the setting as it appears on the command line or in the
// environment: "-search.disableCache", "--logging.level.root=DEBUG",
// "-Xmx160m", "GOGC=20".
func (s Setting) Written() string {
	switch {
	case s.Source == SourceFile && s.Text != "":
		return s.Text
	case s.Alone:
		return s.Name
	case s.Source == SourceJVMOption && strings.HasPrefix(s.Name, "-X") && !strings.HasPrefix(s.Name, "-XX:"):
		return s.Name + s.Value // -Xmx160m
	}
	return s.Name + "=" + s.Value
}

// Bool reads the setting as a boolean: a flag alone is true; true/false,
// yes/no, on/off, 1/0 otherwise. ok is false for any other value.
func (s Setting) Bool() (v, ok bool) {
	if s.Alone {
		return true, true
	}
	switch strings.ToLower(strings.TrimSpace(s.Value)) {
	case "true", "yes", "on", "1", "enabled", "enable":
		return true, true
	case "false", "no", "off", "0", "disabled", "disable", "none":
		return false, true
	}
	return false, false
}

// Config is what the evidence shows of how the process was configured: its
// command line, a JVM's options, system properties and arguments, the Go
// runtime's tuning variables of its environment, and a known server's
// configuration files as its command line names them. A setting it does
// not list was not seen, which is not the same as unset: files the named
// ones include, other environment variables and a server's defaults are
// not read.
type Config struct {
	// Program names what runs: the executable's base name, or a JVM's main
	// class or jar.
	Program string `json:"program,omitempty"`
	// Settings in the order they were given; a later one of the same key
	// usually overrides an earlier one (Last).
	Settings []Setting `json:"settings,omitempty"`
	// Read lists the sources read, for "not checked" statements: "the
	// command line (/proc)", "the JVM's options, properties and arguments
	// (JFR)", "the Go tuning variables of the environment (/proc)".
	Read []string `json:"read,omitempty"`
}

// Last returns the last setting whose key is key (SettingKey form), the
// one a program that reads its flags in order keeps.
func (c Config) Last(key string) (Setting, bool) {
	for i := len(c.Settings) - 1; i >= 0; i-- {
		if c.Settings[i].Key == key {
			return c.Settings[i], true
		}
	}
	return Setting{}, false
}

// Where returns the settings whose key satisfies match, in order.
func (c Config) Where(match func(key string) bool) []Setting {
	var out []Setting
	for _, s := range c.Settings {
		if match(s.Key) {
			out = append(out, s)
		}
	}
	return out
}

// Configuration is the process's configuration as the evidence shows it.
var Configuration = &Fact[Config]{
	Name: "configuration",
	Doc:  "The settings the process was started with, as written: its command line's flags and arguments (/proc, credentials redacted), a JVM's options, system properties and application arguments (JFR), the Go runtime's tuning variables of its environment, and a known server's configuration files as its command line names them (config.json: my.cnf, postgresql.conf, a PgBouncer ini, nginx.conf...; each setting with its file, section and line), each with a key normalised for matching; and which of those sources the evidence had.",
	Compute: func(p *Pass) Config {
		return readConfig(p.Evidence)
	},
}

func readConfig(ev *evidence.Evidence) Config {
	var c Config
	var proc *bundle.ProcessInfo
	for _, snap := range []*bundle.SystemSnapshot{ev.SystemEnd, ev.SystemStart} {
		if snap != nil && snap.Process != nil {
			proc = snap.Process
			break
		}
	}
	switch j := ev.JVM; {
	case j != nil && (j.JVMArguments != "" || j.JavaArguments != "" || len(j.Properties) > 0):
		c.Read = append(c.Read, "the JVM's options, system properties and arguments (JFR)")
		for _, a := range strings.Fields(j.JVMArguments) {
			if s, ok := jvmOption(a); ok {
				c.Settings = append(c.Settings, s)
			}
		}
		args := strings.Fields(j.JavaArguments)
		if len(args) > 0 {
			c.Program = filepath.Base(args[0])
			c.Settings = append(c.Settings, flags(args[1:], SourceArgs)...)
		}
		// Properties JFR read from the running JVM: those given with -D
		// are listed already; the others were set in code or by the JDK.
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range j.Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			key := SettingKey(name)
			if _, seen := c.Last(key); seen || jdkProperty(name) {
				continue
			}
			c.Settings = append(c.Settings, Setting{Name: "-D" + name, Key: key, Value: j.Properties[name], Source: SourceProperty})
		}
	case proc != nil && proc.Cmdline != "":
		c.Read = append(c.Read, "the command line (/proc)")
		args := SplitArgs(proc.Cmdline)
		switch {
		case len(args) > 0 && filepath.Base(args[0]) == "java":
			c.Program, c.Settings = javaCommand(args[1:])
		case len(args) > 0:
			c.Program = filepath.Base(args[0])
			if proc.Executable != "" {
				c.Program = filepath.Base(proc.Executable)
			}
			c.Settings = flags(args[1:], SourceArgs)
			if c.Program == "mariadbd" || c.Program == "mysqld" {
				// MariaDB and MySQL read - and _ in an option's name alike
				// (--innodb-buffer-pool-size is innodb_buffer_pool_size):
				// keyed as their option files' are.
				for i, s := range c.Settings {
					c.Settings[i].Key = SettingKey(strings.ReplaceAll(strings.TrimLeft(s.Name, "-"), "-", "_"))
				}
			}
		}
	}
	if fileSettings, read := configFiles(ev.ConfigFiles); len(read) > 0 {
		// A server reads its files first; its command line overrides them
		// (mysqld's options, postgres -c), so they come first and Last
		// finds the one in force.
		c.Settings = append(fileSettings, c.Settings...)
		c.Read = append(c.Read, read...)
	}
	if proc != nil && proc.GoEnv != nil {
		c.Read = append(c.Read, "the Go tuning variables of the environment (/proc)")
		for _, name := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
			if v, ok := proc.GoEnv[name]; ok {
				c.Settings = append(c.Settings, Setting{Name: name, Key: SettingKey(name), Value: v, Source: SourceEnv})
			}
		}
	}
	return c
}

// configFiles parses a server's configuration files, in the order it
// reads them, and says what was read for Config.Read.
func configFiles(files *bundle.ConfigFiles) (settings []Setting, read []string) {
	if files == nil {
		return nil, nil
	}
	for _, f := range files.Files {
		switch {
		case f.Error != "":
			read = append(read, fmt.Sprintf("%s's configuration file %s: not read (%s)", files.Program, f.Path, f.Error))
		default:
			cut := ""
			if f.Truncated {
				cut = fmt.Sprintf(", its first %d KiB", len(f.Content)>>10)
			}
			read = append(read, fmt.Sprintf("%s's configuration file %s (%s%s)", files.Program, f.Path, f.Named, cut))
			settings = append(settings, ParseConfigFile(f.Format, f.Path, f.Content)...)
		}
	}
	return settings, read
}

// javaCommand reads a java launcher's arguments: its options up to the
// main class or -jar JAR (the program), then the application's arguments.
func javaCommand(args []string) (program string, out []Setting) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-cp", "-classpath", "--class-path", "-p", "--module-path":
			i++ // the option's value
			continue
		case "-jar", "-m", "--module":
			if i+1 < len(args) {
				program = filepath.Base(args[i+1])
			}
			return program, append(out, flags(args[min(i+2, len(args)):], SourceArgs)...)
		}
		if s, ok := jvmOption(a); ok {
			out = append(out, s)
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue // a launcher option perfdoctor does not read (-server, -ea, --source)
		}
		return a, append(out, flags(args[i+1:], SourceArgs)...)
	}
	return program, out
}

// jvmOption reads one JVM option: -Xmx512m, -XX:+UseG1GC,
// -XX:MaxGCPauseMillis=200, -Dname=value. Other arguments are not.
func jvmOption(a string) (Setting, bool) {
	switch {
	case strings.HasPrefix(a, "-D") && len(a) > 2:
		name, value, _ := strings.Cut(a[2:], "=")
		return Setting{Name: "-D" + name, Key: SettingKey(name), Value: value, Source: SourceProperty}, true
	case strings.HasPrefix(a, "-XX:"):
		opt := a[4:]
		if name, value, ok := strings.Cut(opt, "="); ok {
			return Setting{Name: "-XX:" + name, Key: SettingKey(name), Value: value, Source: SourceJVMOption}, true
		}
		if opt != "" && (opt[0] == '+' || opt[0] == '-') {
			value := "true"
			if opt[0] == '-' {
				value = "false"
			}
			return Setting{Name: a, Key: SettingKey(opt[1:]), Value: value, Source: SourceJVMOption}, true
		}
	case strings.HasPrefix(a, "-X"):
		for _, size := range []string{"-Xmx", "-Xms", "-Xmn", "-Xss"} {
			if v, ok := strings.CutPrefix(a, size); ok && v != "" {
				return Setting{Name: size, Key: SettingKey(size), Value: v, Source: SourceJVMOption}, true
			}
		}
		return Setting{Name: a, Key: SettingKey(a), Alone: true, Source: SourceJVMOption}, true
	case strings.HasPrefix(a, "--add-") || strings.HasPrefix(a, "--enable-"):
		name, value, _ := strings.Cut(a, "=")
		return Setting{Name: name, Key: SettingKey(name), Value: value, Source: SourceJVMOption}, true
	}
	return Setting{}, false
}

// flags reads a program's arguments: -name=value, --name=value, -Dname=value,
// name=value (Jetty's start.jar, make-like programs), and flags given alone,
// with the next argument kept as their possible value.
func flags(args []string, source string) []Setting {
	var out []Setting
	for i, a := range args {
		// -Dname=value is a property; -D alone or with letters and no
		// value is a program's switch (nats-server's -D and -DV: debug).
		if strings.HasPrefix(a, "-D") && len(a) > 2 && strings.Contains(a, "=") {
			s, _ := jvmOption(a)
			out = append(out, s)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case strings.HasPrefix(a, "-") && len(strings.TrimLeft(a, "-")) > 0 && !isNumber(a):
			s := Setting{Name: name, Key: SettingKey(name), Value: value, Source: source}
			if !hasValue {
				s.Alone = true
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					s.Next = args[i+1]
				}
			}
			out = append(out, s)
		case hasValue && name != "" && !strings.ContainsAny(name, "/ :"):
			out = append(out, Setting{Name: name, Key: SettingKey(name), Value: value, Source: source})
		}
	}
	return out
}

func isNumber(a string) bool {
	_, err := strconv.ParseFloat(a, 64)
	return err == nil
}

// SettingKey normalises a setting's name for matching across the ways one
// setting is written: leading dashes dropped, lower case, '_' as
// '.', and '-' dropped, so Spring's relaxed forms meet
// (--spring.datasource.hikari.maximum-pool-size, maximumPoolSize,
// SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE) and -search.disableCache is
// "search.disablecache".
func SettingKey(name string) string {
	name = strings.ToLower(strings.TrimLeft(name, "-"))
	name = strings.ReplaceAll(name, "_", ".")
	return strings.ReplaceAll(name, "-", "")
}

// jdkProperty is a property every JVM sets itself (java.*, sun.*, jdk.*,
// os.*, user.*, file.*, line.*, path.*, native.*), not configuration.
func jdkProperty(name string) bool {
	for _, p := range []string{"java.", "javax.", "sun.", "jdk.", "os.", "user.", "file.", "line.", "path.", "native.", "stdout.", "stderr."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// SplitArgs splits a command line as perfdoctor stores it (arguments
// joined by spaces, those holding spaces or quotes double-quoted with Go
// escapes) back into its arguments.
func SplitArgs(line string) []string {
	var out []string
	for i := 0; i < len(line); {
		switch {
		case line[i] == ' ' || line[i] == '\t':
			i++
		case line[i] == '"':
			end := i + 1
			for end < len(line) && line[end] != '"' {
				if line[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end+1, len(line))
			arg, err := strconv.Unquote(line[i:end])
			if err != nil {
				arg = strings.Trim(line[i:end], `"`)
			}
			out = append(out, arg)
			i = end
		default:
			end := strings.IndexAny(line[i:], " \t")
			if end < 0 {
				end = len(line) - i
			}
			out = append(out, line[i:i+end])
			i += end
		}
	}
	return out
}
