package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/report"
)

func TestViewHandlerWithoutProfiles(t *testing.T) {
	// A bundle of statistics only still serves its report.
	rep := &report.Report{Tool: "perfdoctor test", Inputs: report.Inputs{Sources: []string{"stats/"}, Metrics: true}}
	h, err := NewHandler(rep, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if code, body := get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, "no profiles to draw") {
		t.Errorf("%d", code)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
