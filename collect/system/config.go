package system

import (
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// namedFile is a configuration file a server's command line names.
type namedFile struct {
	path   string // as written: absolute, or relative to dir
	dir    string // what a relative path resolves against ("" for the working directory)
	named  string // how it was named: the argument, or "default"
	format string // bundle.ConfigFile.Format
}

// serverConfig names the configuration files a known server reads, from
// its program name (comm or the executable's base name) and its command
// line as /proc shows it, the program first (a title the server wrote over its arguments
// split into words). ok is false for a program that is not a known server;
// note says what could not be named.
func serverConfig(program string, args []string) (server string, files []namedFile, note string, ok bool) {
	if len(args) > 0 {
		args = args[1:] // the program
	}
	// flag returns the value of a flag given as "-f value", "-fvalue",
	// "--long=value" or "--long value", every time it is given.
	flag := func(short string, long ...string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case short != "" && a == short && i+1 < len(args):
				out = append(out, args[i+1])
				i++
			case short != "" && len(short) == 2 && strings.HasPrefix(a, short) && !strings.HasPrefix(a, "--") && len(a) > 2:
				out = append(out, a[2:])
			default:
				for _, l := range long {
					if v, found := strings.CutPrefix(a, l+"="); found {
						out = append(out, v)
					} else if a == l && i+1 < len(args) {
						out = append(out, args[i+1])
						i++
					}
				}
			}
		}
		return out
	}
	switch {
	case program == "mariadbd" || program == "mysqld" || program == "mysqld_safe" || program == "mariadbd-safe":
		server = "mariadbd"
		if program == "mysqld" {
			server = "mysqld"
		}
		for _, a := range args {
			for _, f := range []string{"--defaults-file", "--defaults-extra-file"} {
				if v, found := strings.CutPrefix(a, f+"="); found && v != "" {
					files = append(files, namedFile{path: v, named: f, format: "mysql"})
				}
			}
		}
		if len(files) == 0 {
			note = "no --defaults-file on the command line: the server read the system's option files (/etc/mysql/my.cnf and what it includes), which are not read"
		}
	case program == "postgres" || program == "postmaster":
		server = "postgres"
		dirs := flag("-D", "--pgdata")
		var conf []string
		for _, c := range flag("-c", "--config_file", "--config-file") {
			if v, found := strings.CutPrefix(c, "config_file="); found {
				conf = append(conf, v)
			} else if !strings.Contains(c, "=") {
				conf = append(conf, c)
			}
		}
		dir := ""
		if len(dirs) > 0 {
			dir = dirs[len(dirs)-1]
		}
		switch {
		case len(conf) > 0:
			files = append(files, namedFile{path: conf[len(conf)-1], named: "config_file", format: "postgresql"})
		case dir != "":
			files = append(files, namedFile{path: "postgresql.conf", dir: dir, named: "default", format: "postgresql"})
		}
		if dir != "" {
			// ALTER SYSTEM's settings, read after postgresql.conf.
			files = append(files, namedFile{path: "postgresql.auto.conf", dir: dir, named: "default", format: "postgresql"})
		}
		if len(files) == 0 {
			note = "neither -D nor config_file on the command line (PGDATA in the environment is not read)"
		}
	case program == "pgbouncer":
		server = "pgbouncer"
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "-u" || a == "--user" {
				i++
				continue
			}
			if !strings.HasPrefix(a, "-") {
				files = append(files, namedFile{path: a, named: "argument", format: "ini"})
				break
			}
		}
	case program == "redis-server":
		server = "redis-server"
		for _, a := range args {
			if !strings.HasPrefix(a, "-") && strings.HasSuffix(a, ".conf") {
				files = append(files, namedFile{path: a, named: "argument", format: "redis"})
				break
			}
		}
		if len(files) == 0 {
			note = "redis-server's command line names no configuration file (redis writes its title over its arguments: its listening address shows instead)"
		}
	case program == "nginx":
		server = "nginx"
		prefix := ""
		if p := flag("-p"); len(p) > 0 {
			prefix = p[len(p)-1]
		}
		if c := flag("-c"); len(c) > 0 {
			files = append(files, namedFile{path: c[len(c)-1], dir: prefix, named: "-c", format: "nginx"})
		} else {
			files = append(files, namedFile{path: "/etc/nginx/nginx.conf", named: "default", format: "nginx"})
		}
	case program == "haproxy":
		server = "haproxy"
		for _, f := range flag("-f") {
			files = append(files, namedFile{path: f, named: "-f", format: "haproxy"})
		}
	case strings.HasPrefix(program, "php-fpm"):
		server = "php-fpm"
		if c := flag("-y", "--fpm-config"); len(c) > 0 {
			files = append(files, namedFile{path: c[len(c)-1], named: "--fpm-config", format: "ini"})
		} else {
			// The master's title: "php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)".
			for _, a := range args {
				if strings.HasPrefix(a, "(") && strings.HasSuffix(a, ")") && len(a) > 2 {
					files = append(files, namedFile{path: a[1 : len(a)-1], named: "title", format: "ini"})
				}
			}
		}
	case program == "apache2" || program == "httpd":
		server = program
		root := ""
		if d := flag("-d"); len(d) > 0 {
			root = d[len(d)-1]
		}
		if f := flag("-f"); len(f) > 0 {
			files = append(files, namedFile{path: f[len(f)-1], dir: root, named: "-f", format: "apache"})
		} else if program == "apache2" {
			files = append(files, namedFile{path: "/etc/apache2/apache2.conf", named: "default", format: "apache"})
		}
	default:
		return "", nil, "", false
	}
	if len(files) > bundle.MaxConfigFiles {
		note = strings.TrimPrefix(note+fmt.Sprintf("; %d configuration files named, the first %d read", len(files), bundle.MaxConfigFiles), "; ")
		files = files[:bundle.MaxConfigFiles]
	}
	return server, files, note, true
}

// ErrNotServer means the process is not a server whose configuration files
// perfdoctor knows how to find.
var ErrNotServer = errors.New("not a known server")

// ConfigFiles reads the configuration files a known server's command line
// names (serverConfig), through the process's root (/proc/PID/root), a
// relative path resolved against its working directory (/proc/PID/cwd) or
// the directory its command line names. Each file is bounded to
// bundle.MaxConfigFileBytes and redacted (redact.ConfigText); a file that
// cannot be read is listed with the reason. It returns ErrNotServer for
// another program.
func ConfigFiles(roots Roots, pid int) (*bundle.ConfigFiles, error) {
	roots = roots.withDefaults()
	pfs, err := procfs.NewFS(roots.Proc)
	if err != nil {
		return nil, fmt.Errorf("configuration files: %w", err)
	}
	proc, err := pfs.Proc(pid)
	if err != nil {
		return nil, fmt.Errorf("configuration files: %w", err)
	}
	args, err := proc.CmdLine()
	if err != nil {
		return nil, fmt.Errorf("configuration files: %w", err)
	}
	if len(args) == 1 {
		args = strings.Fields(args[0]) // a title over the arguments
	}
	var programs []string
	if comm, err := proc.Comm(); err == nil {
		programs = append(programs, comm)
	}
	if exe, err := proc.Executable(); err == nil {
		programs = append(programs, filepath.Base(strings.TrimSuffix(exe, " (deleted)")))
	}
	if len(args) > 0 {
		programs = append(programs, filepath.Base(strings.TrimSuffix(args[0], ":")))
	}
	for _, program := range programs {
		server, files, note, ok := serverConfig(program, args)
		if !ok {
			continue
		}
		out := &bundle.ConfigFiles{Program: server, PID: pid, Note: note, Files: []bundle.ConfigFile{}}
		cwd, cwdErr := proc.Cwd()
		base := filepath.Join(roots.Proc, strconv.Itoa(pid), "root")
		for _, f := range files {
			p := f.path
			if f.dir != "" && !path.IsAbs(p) {
				p = path.Join(f.dir, p)
			}
			if !path.IsAbs(p) {
				if cwdErr != nil {
					out.Files = append(out.Files, bundle.ConfigFile{Path: p, Named: f.named, Format: f.format,
						Error: "a relative path, and the process's working directory cannot be read: " + cwdErr.Error()})
					continue
				}
				p = path.Join(cwd, p)
			}
			out.Files = append(out.Files, readConfigFile(base, path.Clean(p), f))
		}
		return out, nil
	}
	return nil, ErrNotServer
}

// readConfigFile reads one file at p (absolute, as the process sees it)
// under root, bounded and redacted.
func readConfigFile(root, p string, f namedFile) bundle.ConfigFile {
	cf := bundle.ConfigFile{Path: p, Named: f.named, Format: f.format}
	fh, err := openInRoot(root, p)
	if err != nil {
		cf.Error = strings.ReplaceAll(err.Error(), root, "")
		return cf
	}
	defer fh.Close()
	st, err := fh.Stat()
	switch {
	case err != nil:
		cf.Error = err.Error()
		return cf
	case !st.Mode().IsRegular():
		cf.Error = "not a regular file (" + st.Mode().Type().String() + ")"
		return cf
	}
	cf.Size = st.Size()
	data, err := io.ReadAll(io.LimitReader(fh, bundle.MaxConfigFileBytes+1))
	if err != nil {
		cf.Error = strings.ReplaceAll(err.Error(), root, "")
		return cf
	}
	if len(data) > bundle.MaxConfigFileBytes {
		data, cf.Truncated = data[:bundle.MaxConfigFileBytes], true
	}
	cf.Content, cf.Redacted = redact.ConfigText(strings.ToValidUTF8(string(data), "\uFFFD"))
	return cf
}
