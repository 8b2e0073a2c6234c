package pool001

import (
	"slices"
	"testing"
)

// Settings that size a pool are read from name=value and from a flag
// followed by its value; timeouts, memory sizes, ports and minimums are not.
func TestSettings(t *testing.T) {
	args := []string{"java", "-Xmx512m", "-Dserver.port=8080", "--server.tomcat.threads.max=2",
		"--spring.datasource.hikari.maximum-pool-size=1", "--spring.datasource.hikari.minimum-idle=1",
		"--spring.datasource.hikari.connection-timeout=30000", "-max-open", "4", "-db-pool", "x",
		"-workers=8", "-cache-size=3", "-read-timeout=5", "-limit", "2", "-memory-limit=1", "-level", "3"}
	var got []string
	for _, b := range settings(args) {
		got = append(got, b.name)
	}
	want := []string{"--server.tomcat.threads.max=2", "--spring.datasource.hikari.maximum-pool-size=1", "-max-open 4", "-workers=8", "-limit 2"}
	if !slices.Equal(got, want) {
		t.Errorf("settings %q, want %q", got, want)
	}
	for _, b := range settings(args) {
		if b.name == "--spring.datasource.hikari.maximum-pool-size=1" && (b.what != "HikariCP's connection pool" || b.size != 1) {
			t.Errorf("hikari: %+v", b)
		}
	}
}

// A peer is named by the command-line URL that points at it, without its
// credentials or query.
func TestPeerURL(t *testing.T) {
	args := []string{"--spring.datasource.url=jdbc:postgresql://127.0.0.1:35683/items?ssl=false", "-db",
		"postgres://user:secret@127.0.0.1:5432/items?sslmode=disable", "-other=http://127.0.0.1:80"}
	for addr, want := range map[string]string{
		"127.0.0.1:35683": "jdbc:postgresql://127.0.0.1:35683/items",
		"127.0.0.1:5432":  "postgres://127.0.0.1:5432/items",
		"127.0.0.1:8":     "",
		"nonsense":        "",
	} {
		if got := peerURL(addr, args); got != want {
			t.Errorf("peerURL(%s) = %q, want %q", addr, got, want)
		}
	}
}

// A bound is what the service served at once when the reading is between
// half its size and 15% over it.
func TestMatches(t *testing.T) {
	b := bound{size: 2}
	for e, want := range map[float64]bool{0.99: false, 1.0: true, 1.71: true, 2.3: true, 2.31: false} {
		if got := b.matches(e); got != want {
			t.Errorf("size 2, %.2f served at once: matches %v", e, got)
		}
	}
	if (bound{}).matches(1) {
		t.Error("a bound of no known size matches")
	}
}
