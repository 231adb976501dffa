package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
)

// argHardening is what a binding states about the values callers put into
// its program's argv (binding.cli.arg_rules and end_of_options, toolmesh
// extensions of the binding format). Values are checked before anything
// runs; a refusal is an invalid_input Problem naming the arg.
type argHardening struct {
	// Rules are per arg name.
	Rules map[string]argRule
	// EndOfOptions puts `--` before the template's first token that
	// starts with a caller's value, so no later value is read as an option.
	EndOfOptions bool
}

// argRule constrains one arg's values (each element of an array).
type argRule struct {
	// NoDash refuses a value that starts with '-' (-rf, --output=…, -5).
	NoDash bool `json:"no_dash,omitempty"`
	// Under makes the value a path that must stay under this directory:
	// a relative value is taken from it, symbolic links are resolved, and
	// the program gets the resolved absolute path.
	Under string `json:"under,omitempty"`
}

// hardeningFields are the binding fields Hardening reads.
func hardeningFields() []string { return []string{"arg_rules", "end_of_options"} }

// parseHardening reads arg_rules and end_of_options from a CLI binding.
func parseHardening(rawBinding json.RawMessage, spec envelope.ToolSpec) (argHardening, error) {
	var raw struct {
		Rules        map[string]json.RawMessage `json:"arg_rules"`
		EndOfOptions bool                       `json:"end_of_options"`
	}
	if err := json.Unmarshal(rawBinding, &raw); err != nil {
		return argHardening{}, fmt.Errorf("field binding.cli: arg_rules or end_of_options: %v", err)
	}
	h := argHardening{EndOfOptions: raw.EndOfOptions}
	for _, name := range sortedKeys(raw.Rules) {
		var r argRule
		if err := strictDecode(raw.Rules[name], &r); err != nil {
			return argHardening{}, fmt.Errorf("field binding.cli.arg_rules.%s: %v (want no_dash, under)", name, err)
		}
		if r.Under != "" {
			root, err := filepath.EvalSymlinks(r.Under)
			if err != nil || !filepath.IsAbs(r.Under) {
				return argHardening{}, fmt.Errorf("field binding.cli.arg_rules.%s.under: %q must be an existing absolute directory", name, r.Under)
			}
			r.Under = root
		}
		if h.Rules == nil {
			h.Rules = map[string]argRule{}
		}
		h.Rules[name] = r
	}
	return h, nil
}

// template returns the args template with `--` before the first token
// that starts with an arg's value, when EndOfOptions asks for it and the
// template has no `--` of its own.
func (h argHardening) template(t string) string {
	toks := strings.Fields(t)
	if !h.EndOfOptions {
		return t
	}
	for i, tok := range toks {
		if tok == "--" {
			return t
		}
		segs := argtemplate.ParseToken(tok)
		if len(segs) > 0 && segs[0].Arg != "" && segs[0].Flag == "" {
			out := append(append(append([]string{}, toks[:i]...), "--"), toks[i:]...)
			return strings.Join(out, " ")
		}
	}
	return t
}

// apply checks the call's args against the rules and returns them with
// path values replaced by their resolved paths; params are returned as
// they came when no rule changed anything.
func (h argHardening) apply(tool string, params []byte) ([]byte, error) {
	if len(h.Rules) == 0 {
		return params, nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(params, &args) != nil {
		return params, nil
	}
	changed := false
	names := make([]string, 0, len(h.Rules))
	for name := range h.Rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, ok := args[name]
		if !ok || isNull(raw) {
			continue
		}
		out, err := h.Rules[name].check(tool, name, raw)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(out, raw) {
			args[name], changed = out, true
		}
	}
	if !changed {
		return params, nil
	}
	return json.Marshal(args)
}

// check applies one rule to one arg (each element of an array).
func (r argRule) check(tool, name string, raw json.RawMessage) (json.RawMessage, error) {
	var items []json.RawMessage
	isArray := json.Unmarshal(raw, &items) == nil
	if !isArray {
		items = []json.RawMessage{raw}
	}
	for i, it := range items {
		v := scalarText(it)
		if r.NoDash && strings.HasPrefix(v, "-") {
			return nil, refusal(tool, name, fmt.Sprintf("value %q starts with '-', which the program would read as an option; this binding refuses it (arg_rules.%s.no_dash)", v, name))
		}
		if r.Under != "" {
			resolved, err := resolveUnder(r.Under, v)
			if err != nil {
				return nil, refusal(tool, name, fmt.Sprintf("%v (arg_rules.%s.under)", err, name))
			}
			b, _ := json.Marshal(resolved)
			items[i] = b
		}
	}
	if r.Under == "" {
		return raw, nil
	}
	if !isArray {
		return items[0], nil
	}
	return json.Marshal(items)
}

// resolveUnder resolves p (relative to root when not absolute), following
// symbolic links as far as the path exists, and refuses anything that
// ends outside root.
func resolveUnder(root, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, p)
	}
	abs = filepath.Clean(abs)
	// Resolve the longest prefix that exists; the rest is created later.
	existing, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(existing); err == nil {
			existing = r
			break
		} else if !os.IsNotExist(err) {
			// The error names host paths the caller never sent.
			return "", fmt.Errorf("path %q cannot be resolved", p)
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		if parent == existing {
			break
		}
		existing = parent
	}
	resolved := filepath.Join(existing, rest)
	if resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
		// Only what the caller sent is named: where it resolves (a symbolic
		// link's target) and the root are the host's, not the caller's.
		return "", fmt.Errorf("path %q leads outside the directory this argument is confined to", p)
	}
	return resolved, nil
}

func refusal(tool, name, msg string) error {
	return envelope.Problemf(envelope.CodeInvalidInput, "tool %s: arg %s: %s", tool, name, msg).
		WithExtension("violations", []map[string]string{{"pointer": "/" + name, "message": msg}})
}
