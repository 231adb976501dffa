package problembase

import (
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// defaultBase is the base envelope builds every Problem's type under.
const defaultBase = "https://toolmesh.dev/problems"

// Registry builds Problems from the one code registry under a base URI.
// The zero value uses https://toolmesh.dev/problems.
type Registry struct {
	// BaseURI replaces https://toolmesh.dev/problems in every type URI:
	// point it at your own documentation host and every type follows.
	BaseURI string
}

// TypeURI returns the versioned type URI of code under the registry's
// base, about:blank for an unregistered code.
func (r Registry) TypeURI(code envelope.Code) string {
	info, ok := codes.Lookup(code)
	if !ok {
		return "about:blank"
	}
	base := r.BaseURI
	if base == "" {
		base = defaultBase
	}
	return strings.TrimRight(base, "/") + "/" + info.Slug + "/" + info.Version
}

// New is envelope.NewProblem under the registry's base URI.
func (r Registry) New(code envelope.Code, detail string) *envelope.Problem {
	return r.Rebase(envelope.NewProblem(code, detail))
}

// Rebase moves p under the registry's base URI when p's type is its
// code's type under the default base — a Problem built by NewProblem, or
// by a handler that knows no better — and returns p. Any other type (a
// peer's own URI, about:blank) is left alone.
func (r Registry) Rebase(p *envelope.Problem) *envelope.Problem {
	if p != nil && r.BaseURI != "" && p.Type == (Registry{}).TypeURI(p.Code) {
		p.Type = r.TypeURI(p.Code)
	}
	return p
}
