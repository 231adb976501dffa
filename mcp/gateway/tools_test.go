package gateway

import (
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

func TestFilter(t *testing.T) {
	f, err := newFilter([]string{"fs.*", " git.status "}, []string{"fs.delete"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want bool
	}{
		{"fs.read", true}, {"fs.delete", false}, {"git.status", true}, {"git.push", false}, {"echo", false},
	}
	for _, c := range cases {
		if got := f.allows(c.name); got != c.want {
			t.Errorf("allows(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := newFilter([]string{"fs.[" /* bad glob */}, nil); err == nil {
		t.Fatal("a malformed pattern must be refused")
	}
	ns, _ := newFilter([]string{"fs.*", "git.*"}, []string{"fs.delete"})
	ns.namespace = "fs."
	for name, want := range map[string]bool{"fs.read": true, "fs.delete": false, "git.status": false, "fs": false, "fsx.read": false} {
		if got := ns.allows(name); got != want {
			t.Errorf("namespace fs: allows(%q) = %v, want %v", name, got, want)
		}
	}
	open, _ := newFilter(nil, []string{"x"})
	if !open.allows("anything") || open.allows("x") {
		t.Fatal("an empty allow list serves everything not denied")
	}
}

func TestProblemLine(t *testing.T) {
	cases := []struct {
		p    *envelope.Problem
		want []string
	}{
		{envelope.NewProblem(envelope.CodeInvalidInput, "bad\npath"), []string{"invalid_input: bad path", "Fix:", "do not retry"}},
		{envelope.NewProblem(envelope.CodeWorkerLost, "gone"), []string{"worker_lost: gone", "Retry after 1s."}},
	}
	for _, c := range cases {
		line := problemLine(c.p)
		for _, w := range c.want {
			if !strings.Contains(line, w) || strings.Contains(line, "\n") {
				t.Errorf("problemLine = %q, want it to contain %q on one line", line, w)
			}
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	cases := []struct {
		origin string
		want   bool
	}{
		{"", true}, {"http://localhost:5173", true}, {"http://127.0.0.1", true}, {"http://[::1]:8080", true},
		{"https://app.example.com", true}, {"https://evil.example", false}, {"null", false}, {"file://x", false},
	}
	for _, c := range cases {
		if got := originAllowed(c.origin, []string{"https://app.example.com/"}); got != c.want {
			t.Errorf("originAllowed(%q) = %v, want %v", c.origin, got, c.want)
		}
	}
}
