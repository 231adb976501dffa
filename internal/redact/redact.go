package redact

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/textcut"
)

// Mark replaces what is removed.
const Mark = "[REDACTED]"

// MinFragment is the shortest piece of a secret that is removed on its own
// (shorter pieces are as likely to be anything else as part of a secret).
const MinFragment = 8

// MinValue is the shortest env or header value taken for a secret (see
// Values): shorter ones ("1", "true", "en") are settings, and hiding them
// would blank ordinary words out of every stderr tail.
const MinValue = 6

// urlSlack is how much text before a cut a Tail keeps beyond its secrets,
// so a URL whose password straddles the cut is still seen with its
// scheme and hidden.
const urlSlack = 256

// Redactor removes a fixed set of secrets (and URL credentials) from text.
// It is safe for concurrent use; the zero value and nil hide URL
// credentials only.
type Redactor struct {
	secrets []string // longest first, none empty
	once    sync.Once
	frags   map[string]struct{} // every MinFragment-byte piece of a secret that long
}

// New returns a Redactor of secrets; empty strings are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if s != "" && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// With returns a Redactor of r's secrets and more; r is left alone.
func (r *Redactor) With(more ...string) *Redactor {
	if r == nil {
		return New(more...)
	}
	return New(append(slices.Clone(r.secrets), more...)...)
}

// Values lists the values of m that are secrets: those at least MinValue
// bytes long (see MinValue).
func Values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		if len(v) >= MinValue {
			out = append(out, v)
		}
	}
	return out
}

// Longest is the length of r's longest secret (0 for none).
func (r *Redactor) Longest() int {
	if r == nil || len(r.secrets) == 0 {
		return 0
	}
	return len(r.secrets[0])
}

// fragments builds, once, the set of MinFragment-byte pieces.
func (r *Redactor) fragments() map[string]struct{} {
	r.once.Do(func() {
		for _, s := range r.secrets {
			for i := 0; i+MinFragment <= len(s); i++ {
				if r.frags == nil {
					r.frags = map[string]struct{}{}
				}
				r.frags[s[i:i+MinFragment]] = struct{}{}
			}
		}
	})
	return r.frags
}

// String returns s without URL credentials and without r's secrets: every
// occurrence of one, and every run of s made of a secret's substrings at
// least MinFragment bytes long, becomes Mark.
func (r *Redactor) String(s string) string {
	s = URLCredentials(s)
	if r == nil || len(r.secrets) == 0 || s == "" {
		return s
	}
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, Mark)
		}
	}
	frags := r.fragments()
	if len(frags) == 0 || len(s) < MinFragment {
		return s
	}
	return hideFragments(s, frags)
}

// hideFragments replaces every run of s covered by pieces in frags.
func hideFragments(s string, frags map[string]struct{}) string {
	var hidden []bool
	for i := 0; i+MinFragment <= len(s); i++ {
		if _, ok := frags[s[i:i+MinFragment]]; ok {
			if hidden == nil {
				hidden = make([]bool, len(s))
			}
			for j := i; j < i+MinFragment; j++ {
				hidden[j] = true
			}
		}
	}
	if hidden == nil {
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

// Keep is how many bytes a buffer that shows its last max bytes must hold
// so that String still sees, whole, a secret or a URL straddling the cut.
func (r *Redactor) Keep(shown int) int { return shown + max(r.Longest(), urlSlack) }

// Tail returns the last max bytes (or fewer, to start on a character) of r.String(s) and whether it cut:
// redacted first, then cut, so the cut cannot split a secret into a
// visible piece.
func (r *Redactor) Tail(s string, max int) (string, bool) {
	s = r.String(s)
	return textcut.Tail(s, max)
}

// Head returns the first max bytes (or fewer, to end on a character) of r.String(s) and whether it cut.
func (r *Redactor) Head(s string, max int) (string, bool) {
	// Only the part that can show matters, plus room to see a secret or a
	// URL's credentials that straddle the cut whole.
	if keep := r.Keep(max); len(s) > keep {
		s, _ = textcut.Head(s, keep)
	}
	return textcut.Head(r.String(s), max)
}

// Error returns err's text redacted ("" for nil).
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}

// Problem returns p without secrets — title, detail, suggested fix, code
// action titles and every extension, however nested. p itself is left
// alone (a handler may return one Problem value from many calls at once):
// the result is p when nothing needed hiding, else a copy.
func (r *Redactor) Problem(p *envelope.Problem) *envelope.Problem {
	if p == nil {
		return nil
	}
	q := *p
	changed := false
	str := func(s string) string {
		out := r.String(s)
		changed = changed || out != s
		return out
	}
	q.Title, q.Detail = str(p.Title), str(p.Detail)
	if p.SuggestedFix != nil {
		f := *p.SuggestedFix
		f.Description = str(f.Description)
		q.SuggestedFix = &f
	}
	if p.CodeActions != nil {
		q.CodeActions = slices.Clone(p.CodeActions)
		for i := range q.CodeActions {
			q.CodeActions[i].Title = str(q.CodeActions[i].Title)
		}
	}
	if p.Extensions != nil {
		q.Extensions = make(map[string]any, len(p.Extensions))
		for k, v := range p.Extensions {
			nv, hid := r.value(v)
			q.Extensions[k] = nv
			changed = changed || hid
		}
	}
	if !changed {
		return p
	}
	return &q
}

// ProblemOf is Problem for an error that is a Problem; any other error is
// returned as an error of its redacted text (nil stays nil).
func (r *Redactor) ProblemOf(err error) error {
	if err == nil {
		return nil
	}
	var p *envelope.Problem
	if errors.As(err, &p) {
		return r.Problem(p)
	}
	if text := err.Error(); r.String(text) != text {
		return redactedError{text: r.String(text), err: err}
	}
	return err
}

// redactedError is an error whose text was redacted; it still unwraps
// to the original, so errors.Is keeps working.
type redactedError struct {
	text string
	err  error
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }

// value redacts one extension value: strings, maps and slices of them
// directly, anything else (a struct, json.RawMessage) through its generic
// JSON form, decoded so escapes cannot hide a secret; it reports whether
// anything was hidden (v itself is returned when nothing was).
func (r *Redactor) value(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool, float64, int, int64:
		return v, false
	case string:
		out := r.String(v)
		return out, out != v
	case map[string]any:
		out, changed := make(map[string]any, len(v)), false
		for k, e := range v {
			ne, hid := r.value(e)
			out[k], changed = ne, changed || hid
		}
		return out, changed
	case []any:
		out, changed := make([]any, len(v)), false
		for i, e := range v {
			ne, hid := r.value(e)
			out[i], changed = ne, changed || hid
		}
		return out, changed
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Mark, true
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return Mark, true
	}
	if out, hid := r.value(generic); hid {
		return out, true
	}
	return v, false
}
