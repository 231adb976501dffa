package argtemplate

import (
	"strings"
)

// Segment is one piece of an args_template token: literal text,
// one of the binding format's fixed placeholders, or a toolmesh per-argument placeholder.
// Exactly one of Literal, Placeholder and Arg is set.
type Segment struct {
	// Literal is text copied as is (unknown placeholders included).
	Literal string
	// Placeholder is a binding-format placeholder with its braces: {tool_id},
	// {params_json}, {dry_run} or {page_all}.
	Placeholder string
	// Arg names the call argument of {arg.NAME} or {arg.NAME?FLAG}.
	Arg string
	// Flag is the FLAG of a flag pair {arg.NAME?FLAG}: FLAG and the value
	// as two argv slots, only when the arg is set.
	Flag string
}

// isSeedPlaceholder reports the binding format's fixed placeholder vocabulary.
func isSeedPlaceholder(s string) bool {
	switch s {
	case "{tool_id}", "{params_json}", "{dry_run}", "{page_all}":
		return true
	}
	return false
}

// ParseToken splits one white-space-free token of an args_template
// into segments, scanning left to right so the grammar matches how values
// are substituted: text a substitution inserts is never parsed again.
func ParseToken(tok string) []Segment {
	var out []Segment
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, Segment{Literal: lit.String()})
			lit.Reset()
		}
	}
	for len(tok) > 0 {
		i := strings.IndexByte(tok, '{')
		if i < 0 {
			lit.WriteString(tok)
			break
		}
		lit.WriteString(tok[:i])
		tok = tok[i:]
		j := strings.IndexByte(tok, '}')
		if j < 0 {
			lit.WriteString(tok)
			break
		}
		cand := tok[:j+1]
		if isSeedPlaceholder(cand) {
			flush()
			out = append(out, Segment{Placeholder: cand})
			tok = tok[j+1:]
			continue
		}
		if name, flag, ok := parseArgPlaceholder(cand); ok {
			flush()
			out = append(out, Segment{Arg: name, Flag: flag})
			tok = tok[j+1:]
			continue
		}
		lit.WriteByte('{')
		tok = tok[1:]
	}
	flush()
	return out
}

// parseArgPlaceholder reads {arg.NAME} or {arg.NAME?FLAG}.
func parseArgPlaceholder(cand string) (name, flag string, ok bool) {
	inner, found := strings.CutPrefix(cand[1:len(cand)-1], "arg.")
	if !found || strings.ContainsRune(inner, '{') {
		return "", "", false
	}
	name, flag, pair := strings.Cut(inner, "?")
	if name == "" || (pair && flag == "") {
		return "", "", false
	}
	return name, flag, true
}

// Args lists the argument names an args_template refers to, in
// order of first use.
func Args(template string) []string {
	var names []string
	seen := map[string]bool{}
	for _, tok := range strings.Fields(template) {
		for _, s := range ParseToken(tok) {
			if s.Arg != "" && !seen[s.Arg] {
				seen[s.Arg] = true
				names = append(names, s.Arg)
			}
		}
	}
	return names
}
