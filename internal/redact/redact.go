// Package redact removes a secret (a caller's bearer) from text the mesh
// reports: Problems, stats, spans and logs. It removes the secret whole and
// every fragment of it at least MinFragment bytes long, so text that was
// cut anywhere — a stderr tail, an output excerpt — leaks no part of it
// either. Redact first, then truncate: truncating redacted text can never
// bring a fragment back.
package redact

import (
	"encoding/json"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
)

// Mark replaces what is removed.
const Mark = "[REDACTED]"

// MinFragment is the shortest piece of a secret that is removed on its own
// (shorter pieces are as likely to be anything else as part of a secret).
const MinFragment = 8

// String returns s without secret: every occurrence of it, and every run
// of s made of secret's substrings at least MinFragment bytes long, becomes
// Mark. An empty secret changes nothing.
func String(s, secret string) string {
	if secret == "" || s == "" {
		return s
	}
	s = strings.ReplaceAll(s, secret, Mark)
	k := min(MinFragment, len(secret))
	if len(s) < k {
		return s
	}
	frags := make(map[string]struct{}, len(secret)-k+1)
	for i := 0; i+k <= len(secret); i++ {
		frags[secret[i:i+k]] = struct{}{}
	}
	hidden := make([]bool, len(s))
	found := false
	for i := 0; i+k <= len(s); i++ {
		if _, ok := frags[s[i:i+k]]; ok {
			for j := i; j < i+k; j++ {
				hidden[j] = true
			}
			found = true
		}
	}
	if !found {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if !hidden[i] {
			b.WriteByte(s[i])
			continue
		}
		b.WriteString(Mark)
		for i+1 < len(s) && hidden[i+1] {
			i++
		}
	}
	return b.String()
}

// Tail returns the last max bytes of String(s, secret) and whether it
// cut: redacted first, then cut, so the cut cannot split the secret into a
// visible piece.
func Tail(s, secret string, max int) (string, bool) {
	s = String(s, secret)
	if len(s) > max {
		return s[len(s)-max:], true
	}
	return s, false
}

// Head returns the first max bytes of String(s, secret) and whether it cut.
func Head(s, secret string, max int) (string, bool) {
	// Only the part that can show matters, plus room to see a secret that
	// straddles the cut whole.
	if len(s) > max+len(secret) {
		s = s[:max+len(secret)]
	}
	s = String(s, secret)
	if len(s) > max {
		return s[:max], true
	}
	return s, false
}

// Problem returns a copy of p without secret — title, detail, suggested
// fix and every extension, however nested. p itself is left alone: a
// handler may return one Problem value from many calls at once.
func Problem(p *envelope.Problem, secret string) *envelope.Problem {
	if p == nil || secret == "" {
		return p
	}
	q := *p
	q.Title = String(p.Title, secret)
	q.Detail = String(p.Detail, secret)
	if p.SuggestedFix != nil {
		f := *p.SuggestedFix
		f.Description = String(f.Description, secret)
		q.SuggestedFix = &f
	}
	if p.Extensions != nil {
		q.Extensions = make(map[string]any, len(p.Extensions))
		for k, v := range p.Extensions {
			q.Extensions[k] = value(v, secret)
		}
	}
	return &q
}

// value redacts one extension value: a string directly, anything else
// through its JSON form (kept as JSON when it stays valid, else replaced).
func value(v any, secret string) any {
	if s, ok := v.(string); ok {
		return String(s, secret)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Mark
	}
	r := String(string(b), secret)
	if r == string(b) {
		return v
	}
	if json.Valid([]byte(r)) {
		return json.RawMessage(r)
	}
	return Mark
}
