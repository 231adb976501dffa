package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"
)

// legacyProblemJSON is the reflection-based encoder appendJSON replaced,
// kept as the reference the fast one must match byte for byte.
func legacyProblemJSON(p *Problem) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	member := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":`)
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("problem %s: %w", name, err)
		}
		b.Write(enc)
		return nil
	}
	typ := p.Type
	if typ == "" {
		typ = "about:blank"
	}
	actions := p.CodeActions
	if actions == nil {
		actions = []CodeAction{}
	}
	for _, m := range []struct {
		name string
		v    any
	}{
		{"type", typ}, {"title", p.Title}, {"status", p.Status}, {"detail", p.Detail},
		{"instance", p.Instance}, {"code", p.Code}, {"retry_after", p.RetryAfter},
		{"suggested_fix", p.SuggestedFix}, {"code_actions", actions}, {"exit_code", p.ExitCode},
	} {
		if err := member(m.name, m.v); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Extensions)) {
		if standardMembers[k] {
			continue
		}
		if err := member(jsonString(k), p.Extensions[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FuzzProblemAppendJSON: the fast encoder writes exactly what the
// reflection-based one did, whatever the strings and numbers.
func FuzzProblemAppendJSON(f *testing.F) {
	f.Add("t", "title", 400, "a <b> & \"c\"\n\x01\u2028", "urn:x", "invalid_input", 1.5, true, "fix", "maybe_incorrect", 2, "ext", "v\xff")
	f.Add("", "", 0, "", "", "", 0.0, false, "", "", 0, "", "")
	f.Add("x", "y", 599, "é ☃ \t", "i", "c", 1e-7, true, "d", "a", 130, "meta", "mode")
	f.Add("x", "y", 1, "d", "i", "c", 1e21, true, "d", "a", 1, "violations", "")
	f.Fuzz(func(t *testing.T, typ, title string, status int, detail, instance, code string, retry float64, hasRetry bool, fix, appl string, exit int, extName, extVal string) {
		p := &Problem{Type: typ, Title: title, Status: status, Detail: detail, Instance: instance, Code: Code(code), ExitCode: exit}
		if hasRetry {
			p.RetryAfter = &retry
		}
		if fix != "" {
			p.SuggestedFix = &SuggestedFix{Description: fix, Applicability: Applicability(appl)}
		}
		if extName != "" {
			p.Extensions = map[string]any{extName: extVal, "violations": []Violation{{Pointer: "/" + extVal, Message: detail}}}
		}
		want, wantErr := legacyProblemJSON(p)
		got, gotErr := p.appendJSON(nil)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("errors differ: %v vs %v", wantErr, gotErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// Instances are RFC 9562 version-4 UUID URNs, and fresh each time.
func TestNewInstanceIsAUUIDv4URN(t *testing.T) {
	re := regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newInstance()
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("instance %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}
