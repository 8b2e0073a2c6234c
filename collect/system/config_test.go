package system

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

func TestServerConfig(t *testing.T) {
	type file struct{ path, dir, named, format string }
	for _, c := range []struct {
		program, cmdline string
		server           string
		want             []file
		note             bool
	}{
		{"mariadbd", "mariadbd --defaults-file=/w/bad/my.cnf --user=root", "mariadbd", []file{{"/w/bad/my.cnf", "", "--defaults-file", "mysql"}}, false},
		{"mysqld", "mysqld --defaults-extra-file=extra.cnf", "mysqld", []file{{"extra.cnf", "", "--defaults-extra-file", "mysql"}}, false},
		{"mariadbd", "mariadbd", "mariadbd", nil, true},
		{"postgres", "/usr/lib/postgresql/15/bin/postgres -D /w/bad -p 43267 -k /w/bad -c shared_buffers=1GB", "postgres",
			[]file{{"postgresql.conf", "/w/bad", "default", "postgresql"}, {"postgresql.auto.conf", "/w/bad", "default", "postgresql"}}, false},
		{"postgres", "postgres -D /var/lib/pg -c config_file=/etc/pg/postgresql.conf", "postgres",
			[]file{{"/etc/pg/postgresql.conf", "", "config_file", "postgresql"}, {"postgresql.auto.conf", "/var/lib/pg", "default", "postgresql"}}, false},
		{"postgres", "postgres: checkpointer", "postgres", nil, true},
		{"pgbouncer", "pgbouncer -u postgres /w/bouncer/bad.ini", "pgbouncer", []file{{"/w/bouncer/bad.ini", "", "argument", "ini"}}, false},
		{"redis-server", "redis-server 127.0.0.1:6379", "redis-server", nil, true},
		{"redis-server", "redis-server /etc/redis/redis.conf --port 7000", "redis-server", []file{{"/etc/redis/redis.conf", "", "argument", "redis"}}, false},
		{"nginx", "nginx: master process nginx -e /w/site.conf.stderr -c /w/site.conf", "nginx", []file{{"/w/site.conf", "", "-c", "nginx"}}, false},
		{"nginx", "nginx: master process /usr/sbin/nginx -p /srv -c conf/n.conf", "nginx", []file{{"conf/n.conf", "/srv", "-c", "nginx"}}, false},
		{"nginx", "nginx: master process /usr/sbin/nginx", "nginx", []file{{"/etc/nginx/nginx.conf", "", "default", "nginx"}}, false},
		{"haproxy", "haproxy -db -f /w/a.cfg -f /w/b.cfg", "haproxy", []file{{"/w/a.cfg", "", "-f", "haproxy"}, {"/w/b.cfg", "", "-f", "haproxy"}}, false},
		{"php-fpm8.2", "php-fpm: master process (/w/fpm.conf)", "php-fpm", []file{{"/w/fpm.conf", "", "title", "ini"}}, false},
		{"php-fpm8.2", "php-fpm8.2 -y /w/fpm.conf -F", "php-fpm", []file{{"/w/fpm.conf", "", "--fpm-config", "ini"}}, false},
		{"apache2", "apache2 -f /w/apache.conf -DFOREGROUND", "apache2", []file{{"/w/apache.conf", "", "-f", "apache"}}, false},
	} {
		server, files, note, ok := serverConfig(c.program, strings.Fields(c.cmdline))
		if !ok || server != c.server {
			t.Errorf("%s: server %q %v, want %q", c.cmdline, server, ok, c.server)
			continue
		}
		var got []file
		for _, f := range files {
			got = append(got, file{f.path, f.dir, f.named, f.format})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: files %v, want %v", c.cmdline, got, c.want)
		}
		if (note != "") != c.note {
			t.Errorf("%s: note %q", c.cmdline, note)
		}
	}
	if _, _, _, ok := serverConfig("svc", []string{"svc", "-c", "x.conf"}); ok {
		t.Error("a program that is not a known server has its files read")
	}
}

// configProc makes a /proc/PID with a command line, comm, working
// directory and root under a temporary directory.
func configProc(t *testing.T, pid string, args []string, comm string) (Roots, string) {
	t.Helper()
	proc := filepath.Join(t.TempDir(), "proc")
	dir := filepath.Join(proc, pid)
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "srv", "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/srv", filepath.Join(dir, "cwd")); err != nil {
		t.Fatal(err)
	}
	return Roots{Proc: proc}, root
}

func TestConfigFiles(t *testing.T) {
	roots, root := configProc(t, "77", []string{"mariadbd", "--defaults-file=db/my.cnf", "--defaults-extra-file=/srv/missing.cnf"}, "mariadbd")
	conf := "[client]\npassword = hunter2\n[mariadbd]\ninnodb_buffer_pool_size=6M\n" + strings.Repeat("# padding\n", bundle.MaxConfigFileBytes/10)
	if err := os.WriteFile(filepath.Join(root, "srv", "db", "my.cnf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ConfigFiles(roots, 77)
	if err != nil {
		t.Fatal(err)
	}
	if got.Program != "mariadbd" || len(got.Files) != 2 {
		t.Fatalf("got %+v", got)
	}
	f := got.Files[0]
	if f.Path != "/srv/db/my.cnf" || !f.Truncated || f.Size != int64(len(conf)) || len(f.Content) > bundle.MaxConfigFileBytes+len("REDACTED") || f.Redacted != 1 || f.Error != "" {
		t.Errorf("the relative file: path %s truncated %v size %d content %d redacted %d error %q", f.Path, f.Truncated, f.Size, len(f.Content), f.Redacted, f.Error)
	}
	if strings.Contains(f.Content, "hunter2") || !strings.Contains(f.Content, "innodb_buffer_pool_size=6M") {
		t.Errorf("content %q", f.Content[:80])
	}
	if m := got.Files[1]; m.Error == "" || m.Content != "" || strings.Contains(m.Error, root) {
		t.Errorf("the missing file: %+v", m)
	}

	// A link with an absolute target is resolved inside the process's
	// root, as the process resolves it, not on the host.
	roots, root = configProc(t, "79", []string{"pgbouncer", "/srv/pgbouncer.ini"}, "pgbouncer")
	if err := os.WriteFile(filepath.Join(root, "srv", "db", "real.ini"), []byte("[pgbouncer]\ndefault_pool_size = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/srv/db/real.ini", filepath.Join(root, "srv", "pgbouncer.ini")); err != nil {
		t.Fatal(err)
	}
	got, err = ConfigFiles(roots, 79)
	if err != nil || len(got.Files) != 1 || !strings.Contains(got.Files[0].Content, "default_pool_size = 1") {
		t.Errorf("a linked file: %+v %v", got, err)
	}

	roots, _ = configProc(t, "78", []string{"/usr/bin/svc", "-c", "x.conf"}, "svc")
	if _, err := ConfigFiles(roots, 78); !errors.Is(err, ErrNotServer) {
		t.Errorf("a program that is not a server: %v", err)
	}
}
