package problembase

import (
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// The zero Registry's types are the ones envelope builds, for every code,
// so a Problem from envelope.NewProblem is recognised for rebasing.
func TestDefaultBaseIsEnvelopes(t *testing.T) {
	for _, c := range codes.All() {
		if got, want := (Registry{}).TypeURI(envelope.Code(c)), envelope.NewProblem(envelope.Code(c), "x").Type; got != want {
			t.Errorf("%s: type %s, envelope builds %s", c, got, want)
		}
	}
}

// A configured base replaces the default in New and Rebase, with or
// without its trailing slash, and leaves a foreign type alone.
func TestBaseURIRebases(t *testing.T) {
	r := Registry{BaseURI: "https://example.org/e/"}
	if got := r.New(envelope.CodeTimeout, "x").Type; got != "https://example.org/e/timeout/v1" {
		t.Errorf("type = %s", got)
	}
	if got := r.Rebase(envelope.NewProblem(envelope.CodeOverloaded, "x")).Type; got != "https://example.org/e/overloaded/v1" {
		t.Errorf("rebased type = %s", got)
	}
	foreign := envelope.NewProblem(envelope.CodeTimeout, "x")
	foreign.Type = "https://peer.example/t"
	if got := r.Rebase(foreign).Type; got != "https://peer.example/t" {
		t.Errorf("a foreign type was rebased to %s", got)
	}
	if got := r.TypeURI("made_up"); got != "about:blank" {
		t.Errorf("unregistered code's type = %s", got)
	}
	if p := r.New("made_up", "x"); p.Code != envelope.CodeInternal || p.Type != "https://example.org/e/internal-error/v1" {
		t.Errorf("unregistered code gave %s %s", p.Code, p.Type)
	}
}
