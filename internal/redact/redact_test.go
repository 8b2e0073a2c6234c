package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/bin/svc", "--port=8080", "-v"}, "/bin/svc --port=8080 -v"},
		{[]string{"svc", "--password=x"}, "svc --password=REDACTED"},
		{[]string{"svc", "-db-pass=x", "--DB_PASSWORD=y"}, "svc -db-pass=REDACTED --DB_PASSWORD=REDACTED"},
		{[]string{"svc", "--password", "hunter2", "--next"}, "svc --password REDACTED --next"},
		{[]string{"svc", "--password", "--next"}, "svc --password --next"}, // flag without value
		{[]string{"svc", "--api-key", "k", "-p", "8080"}, "svc --api-key REDACTED -p 8080"},
		{[]string{"env", "GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=y", "LANG=C", "svc"}, "env GITHUB_TOKEN=REDACTED AWS_SECRET_ACCESS_KEY=REDACTED LANG=C svc"},
		{[]string{"svc", "token=abc"}, "svc token=REDACTED"},
		{[]string{"svc", "--db=postgres://app:s3cret@db:5432/x?sslmode=disable"}, "svc --db=postgres://app:REDACTED@db:5432/x?sslmode=disable"},
		{[]string{"svc", "https://ghp_token@github.com/x"}, "svc https://REDACTED@github.com/x"},
		{[]string{"svc", "--upstream", "http://h/x?access_token=abc&page=2"}, "svc --upstream http://h/x?access_token=REDACTED&page=2"},
		{[]string{"svc", "-dsn", "user:pw@tcp(db:3306)/app"}, "svc -dsn user:REDACTED@tcp(db:3306)/app"},
		{[]string{"svc", "--name", "two words"}, `svc --name "two words"`},
		{[]string{"svc", "--secret-file=/run/secrets/x"}, "svc --secret-file=REDACTED"}, // over-redaction is the safe side
		{nil, ""},
	} {
		if got := Args(tc.args); got != tc.want {
			t.Errorf("Args(%q)\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://host:6060/debug/pprof/":                 "http://host:6060/debug/pprof/",
		"http://admin:pw@host:6060/debug/pprof/":        "http://admin:REDACTED@host:6060/debug/pprof/",
		"http://tok@host/debug/pprof/":                  "http://REDACTED@host/debug/pprof/",
		"https://host/debug/pprof/?token=abc&x=1":       "https://host/debug/pprof/?token=REDACTED&x=1",
		"https://host/debug/pprof/?X-Amz-Signature=abc": "https://host/debug/pprof/?X-Amz-Signature=REDACTED",
		"http://host/debug/pprof/?token=abc;x=1":        "http://host/debug/pprof/?REDACTED",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := URL(u); got != want {
			t.Errorf("URL(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzRedactArgs checks that a value given to a password flag never survives
// (unless it looks like the next flag, the one documented gap).
func FuzzRedactArgs(f *testing.F) {
	f.Add("--password", "hunter2")
	f.Add("--db", "postgres://u:hunter2@h/db")
	f.Add("-p", "8080")
	f.Fuzz(func(t *testing.T, flag, value string) {
		out := Args([]string{"svc", "--password=" + value, "--token", value, flag})
		if len(value) >= 4 && !looksLikeFlag(value) && !strings.Contains("svc --password= --token "+flag+Redacted, value) && strings.Contains(out, value) {
			t.Fatalf("secret %q survives in %q", value, out)
		}
	})
}

func TestConfigText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"innodb_buffer_pool_size=6M\n", "innodb_buffer_pool_size=6M\n"},
		{"password=s3cret\n", "password=REDACTED\n"},
		{"  password = 's3 cret'  \n", "  password = REDACTED\n"},
		{"requirepass foobared\r\n", "requirepass REDACTED\r\n"},
		{"# requirepass foobared\n", "# requirepass REDACTED\n"},
		{"masterauth x", "masterauth REDACTED"},
		{"postgres = host=127.0.0.1 port=5432 dbname=postgres password=x user=y\n", "postgres = host=127.0.0.1 port=5432 dbname=postgres password=REDACTED\n"},
		{"auth_file = /etc/pgbouncer/userlist.txt\n", "auth_file = REDACTED\n"},
		{"    user admin insecure-password hunter2\n", "    user admin insecure-password REDACTED\n"},
		{"proxy_set_header Authorization \"Basic dXNlcjpwYXNz\";\n", "proxy_set_header Authorization REDACTED;\n"},
		{"proxy_pass http://127.0.0.1:8080;\n", "proxy_pass http://127.0.0.1:8080;\n"},
		{"proxy_pass http://u:p@upstream:8080/;\n", "proxy_pass http://u:REDACTED@upstream:8080/;\n"},
		{"skip-grant-tables\n", "skip-grant-tables\n"},
		{"default_pool_size = 1\n", "default_pool_size = 1\n"},
		{"[client]\n", "[client]\n"},
		{"ssl_key_file = x\n", "ssl_key_file = x\n"},
	} {
		got, n := ConfigText(c.in)
		if got != c.want {
			t.Errorf("ConfigText(%q) = %q, want %q", c.in, got, c.want)
		}
		if (n > 0) != (got != c.in) {
			t.Errorf("ConfigText(%q) counted %d changed lines", c.in, n)
		}
	}
}
