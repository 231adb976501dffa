package argtemplate

import (
	"strings"
	"testing"
)

// FuzzParseTemplateToken checks the args_template grammar on any token:
// the segments spell the token back exactly, and every arg segment has a
// name free of the characters that end or split a placeholder.
func FuzzParseTemplateToken(f *testing.F) {
	for _, s := range []string{"{arg.x}", "--n={arg.n}", "{arg.v?-e}", "{{params_json}}", "{arg.}", "{arg.a?}", "x{arg.{y}}", "{dry_run}{page_all}{tool_id}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		var back strings.Builder
		for _, s := range ParseToken(tok) {
			switch {
			case s.Arg != "" && s.Flag != "":
				back.WriteString("{arg." + s.Arg + "?" + s.Flag + "}")
			case s.Arg != "":
				back.WriteString("{arg." + s.Arg + "}")
			case s.Placeholder != "":
				back.WriteString(s.Placeholder)
			default:
				back.WriteString(s.Literal)
			}
			if s.Arg != "" && strings.ContainsAny(s.Arg, "{}?") {
				t.Fatalf("arg name %q", s.Arg)
			}
		}
		if back.String() != tok {
			t.Fatalf("segments of %q spell %q", tok, back.String())
		}
	})
}
