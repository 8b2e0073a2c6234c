package facts_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
)

// got renders settings as "section|name|value|line" for comparison.
func got(ss []facts.Setting) []string {
	var out []string
	for _, s := range ss {
		out = append(out, strings.Join([]string{s.Section, s.Name, s.Value, strconv.Itoa(s.Line)}, "|"))
	}
	return out
}

func TestParseConfigFile(t *testing.T) {
	for _, c := range []struct {
		format, text string
		want         []string
	}{
		{"mysql", "[client]\npassword=x\nport=3306\n[mariadbd]\ndatadir=/w/data  # the data\ninnodb-buffer-pool-size = 6M\nskip-name-resolve\n!includedir /etc/mysql/conf.d/\n[mysqld-10.11]\nmax_connections=\"151\"\n[mysqldump]\nquick\n",
			[]string{"mariadbd|datadir|/w/data|5", "mariadbd|innodb_buffer_pool_size|6M|6", "mariadbd|skip_name_resolve||7", "mysqld-10.11|max_connections|151|10"}},
		{"ini", "[databases]\npostgres = host=127.0.0.1 port=5432 dbname=postgres\n\n[pgbouncer]\n; a comment\nlisten_port = 6432\ndefault_pool_size = 1\nunix_socket_dir =\n",
			[]string{"databases|postgres|host=127.0.0.1 port=5432 dbname=postgres|2", "pgbouncer|listen_port|6432|6", "pgbouncer|default_pool_size|1|7", "pgbouncer|unix_socket_dir||8"}},
		{"postgresql", "shared_buffers = 128MB\t\t# min 128kB\nlog_statement='all'\nlog_line_prefix = '%m [%p] ''x'' '\nfsync off\n#work_mem = 4MB\n",
			[]string{"|shared_buffers|128MB|1", "|log_statement|all|2", "|log_line_prefix|%m [%p] 'x' |3", "|fsync|off|4"}},
		{"redis", "# comment\nappendonly yes\nappendfsync always\nsave \"\"\n",
			[]string{"|appendonly|yes|2", "|appendfsync|always|3", "|save||4"}},
		{"haproxy", "global\n  maxconn 4096\ndefaults\n  mode http\n  option http-server-close\nbackend be\n  server s1 127.0.0.1:80 maxconn 16\n",
			[]string{"global|maxconn|4096|2", "defaults|mode|http|4", "defaults|option|http-server-close|5", "backend be|server|s1 127.0.0.1:80 maxconn 16|7"}},
		{"apache", "ServerRoot /etc/apache2\n<IfModule mpm_event_module>\n  MaxRequestWorkers 16\n</IfModule>\nListen 8080\n",
			[]string{"|ServerRoot|/etc/apache2|1", "IfModule mpm_event_module|MaxRequestWorkers|16|3", "|Listen|8080|5"}},
		{"nginx", "worker_processes 1;\nerror_log /w/e.log debug;\nevents { worker_connections 4096; }\nhttp {\n  gzip on; gzip_comp_level 9; # max\n  server {\n    listen 127.0.0.1:8080;\n    location / { return 200 'a;b'; }\n  }\n}\n",
			[]string{"|worker_processes|1|1", "|error_log|/w/e.log debug|2", "events|worker_connections|4096|3", "http|gzip|on|5", "http|gzip_comp_level|9|5",
				"http server|listen|127.0.0.1:8080|7", "http server location /|return|200 a;b|8"}},
		{"unknown", "a = b\n", nil},
	} {
		g := got(facts.ParseConfigFile(c.format, "/w/f", c.text))
		if strings.Join(g, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.format, g, c.want)
		}
	}
	s := facts.ParseConfigFile("mysql", "/w/bad/my.cnf", "[mariadbd]\ninnodb_buffer_pool_size=6M\n")[0]
	if s.Key != "innodb.buffer.pool.size" || s.Written() != "innodb_buffer_pool_size=6M" || s.Where() != "/w/bad/my.cnf, [mariadbd], line 2" || s.Source != facts.SourceFile {
		t.Errorf("setting %+v: written %q, where %q", s, s.Written(), s.Where())
	}
}

// The parsers take any text: no panic, and every setting named, keyed as
// SettingKey keys its name, on a line of the text.
func FuzzParseConfigFile(f *testing.F) {
	for _, seed := range []string{
		"[mariadbd]\ninnodb_buffer_pool_size=6M\n!include x\n",
		"[pgbouncer]\ndefault_pool_size = 1\n",
		"shared_buffers = '1GB' # c\n",
		"appendfsync always\n",
		"http { server { listen 80; location / { return 200 \"x;\"; } } }\n",
		"backend be\n server s 1:2\n",
		"<IfModule x>\nMaxRequestWorkers 4\n</IfModule>\n",
		"{ } ; ' \" # [ ] = \n\x00",
	} {
		for _, format := range []string{"mysql", "ini", "postgresql", "redis", "haproxy", "apache", "nginx"} {
			f.Add(format, seed)
		}
	}
	f.Fuzz(func(t *testing.T, format, text string) {
		n := strings.Count(text, "\n") + 1
		for _, s := range facts.ParseConfigFile(format, "/f", text) {
			if s.Name == "" || s.Key != facts.SettingKey(s.Name) || s.Line < 1 || s.Line > n || s.Source != facts.SourceFile {
				t.Fatalf("%s: setting %+v of %q", format, s, text)
			}
		}
	})
}
