package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestLineRewritesInPlace(t *testing.T) {
	var buf bytes.Buffer
	l := To(&buf)
	l.Update("collecting cpu %ds/%ds", 12, 30)
	l.Update("done")
	l.Clear()
	out := buf.String()
	if !strings.HasPrefix(out, "\rcollecting cpu 12s/30s") || !strings.Contains(out, "\rdone") || !strings.HasSuffix(out, "\r") {
		t.Errorf("output %q", out)
	}
}

func TestSilentInPipesAndNil(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := New(w)
	l.Update("should not appear")
	l.Clear()
	w.Close()
	var buf bytes.Buffer
	buf.ReadFrom(r)
	if buf.Len() != 0 || l.Active() {
		t.Errorf("pipe got %q", buf.String())
	}
	var nilLine *Line
	nilLine.Update("x") // must not panic
	nilLine.Clear()
}
