package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolmesh/toolmesh/internal/argtemplate"
)

// Lint returns what `toolmesh tools lint` reports of a loaded tools file
// beyond the loader's own warnings: tools that run unconfined, and
// template tokens that hand a caller's value to the program where it
// reads options, unprotected by `--` or a no_dash rule.
func Lint(f *File) []string {
	out := append([]string(nil), f.warnings...)
	for _, t := range f.tools {
		if t.Sandbox == nil {
			out = append(out, fmt.Sprintf("%s: no sandbox: the program runs with the worker's own rights (every file, the network, no resource limits); give the tool (or the file) a sandbox block", t.Spec.Name))
		}
		out = append(out, optionPositionWarnings(t)...)
	}
	return out
}

// optionPositionWarnings names the tokens of t's template that start with
// a caller's value before any `--`: a value such as -rf or --output=…
// there becomes an option of the program.
func optionPositionWarnings(t fileTool) []string {
	b := t.Binding
	var out []string
	afterDashes := false
	for _, tok := range strings.Fields(t.Hardening.template(b.ArgsTemplate)) {
		if tok == "--" {
			afterDashes = true
			continue
		}
		segs := argtemplate.ParseToken(tok)
		if len(segs) == 0 || segs[0].Arg == "" || afterDashes || t.Hardening.Rules[segs[0].Arg].NoDash {
			continue
		}
		name := segs[0].Arg
		if segs[0].Flag != "" && argIsBoolean(t.Spec.InputSchema, name) {
			continue // a boolean flag pair renders FLAG alone: no value follows it
		}
		if segs[0].Flag != "" {
			out = append(out, fmt.Sprintf("%s: args_template token %s: the value of %s follows %s; a value starting with '-' is safe only if %s takes an argument (add arg_rules.%s.no_dash to be sure)",
				t.Spec.Name, tok, name, segs[0].Flag, segs[0].Flag, name))
			continue
		}
		out = append(out, fmt.Sprintf("%s: args_template token %s puts a caller's value where the program reads options: -rf or --output=/etc/passwd would be an option; set end_of_options: true (a -- before it) or arg_rules.%s.no_dash",
			t.Spec.Name, tok, name))
	}
	return out
}

// argIsBoolean reports whether the input schema declares arg name a
// boolean (type "boolean", or only "boolean" and "null"), whose flag pair
// {arg.NAME?FLAG} passes FLAG alone for true and nothing for false.
func argIsBoolean(schema json.RawMessage, name string) bool {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	prop, ok := s.Properties[name]
	if !ok {
		return false
	}
	var one string
	if json.Unmarshal(prop.Type, &one) == nil {
		return one == "boolean"
	}
	var many []string
	if json.Unmarshal(prop.Type, &many) != nil || len(many) == 0 {
		return false
	}
	for _, typ := range many {
		if typ != "boolean" && typ != "null" {
			return false
		}
	}
	return slices.Contains(many, "boolean")
}
