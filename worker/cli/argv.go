package cli

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/toolmesh/toolmesh/internal/argtemplate"
)

// buildArgv builds a program's argument vector for one call, never through a
// shell: cmd, then the binding's fixed args, then the args_template split on
// white space into tokens with placeholders substituted inside each token.
// {params_json} is the call's args as they arrived (one argv slot whatever
// it contains), {tool_id} the tool's name, {dry_run} and {page_all} the
// binding's flags when the call asks for them and empty otherwise. A token
// that renders empty is dropped; unknown placeholders pass through literally.
//
// Per-argument placeholders (a toolmesh extension; the binding format passes unknown placeholders through):
// {arg.NAME} is one arg's value — a string verbatim, a number or boolean as
// its JSON text, an object as JSON; a token naming an absent (or null) arg
// is dropped whole; an array repeats the token once per element. The whole
// token {arg.NAME?FLAG} is a flag pair: FLAG then the value as two slots
// (FLAG value FLAG value … for an array, FLAG alone for true, nothing for
// false or absent). A present value keeps its slot even when it is "".
func buildArgv(b *cliBinding, toolID string, params []byte, dryRun, pageAll bool) []string {
	argv := make([]string, 0, 2+len(b.Args)+4)
	argv = append(argv, b.Cmd)
	argv = append(argv, b.Args...)
	if b.ArgsTemplate == "" {
		return argv
	}
	r := renderer{fixed: map[string]string{
		"{tool_id}":     toolID,
		"{params_json}": string(params),
		"{dry_run}":     flagIf(dryRun, b.DryRunFlag),
		"{page_all}":    flagIf(pageAll, b.PageAllFlag),
	}}
	if strings.Contains(b.ArgsTemplate, "{arg.") {
		r.args = decodeArgs(params)
	}
	for _, tok := range strings.Fields(b.ArgsTemplate) {
		argv = append(argv, r.token(argtemplate.ParseToken(tok))...)
	}
	return argv
}

func flagIf(on bool, flag string) string {
	if on {
		return flag
	}
	return ""
}

// decodeArgs reads the call's args as an object of raw members; anything
// else (the worker has already checked the args) has no members.
func decodeArgs(params []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return nil
	}
	return m
}

// renderer substitutes one call's values into template tokens.
type renderer struct {
	fixed map[string]string
	args  map[string]json.RawMessage
}

// argValues renders one arg as argv values: nil when absent or null, one
// value per element for an array (null elements skipped), else one value.
func (r renderer) argValues(name string) (vals []string, present bool) {
	raw, ok := r.args[name]
	if !ok || isNull(raw) {
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return []string{scalarText(raw)}, true
	}
	for _, it := range items {
		if !isNull(it) {
			vals = append(vals, scalarText(it))
		}
	}
	return vals, len(vals) > 0
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// scalarText is a string's own text, or the JSON text of any other value
// (compacted, so an object is one line).
func scalarText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// token renders one parsed token into zero or more argv slots.
func (r renderer) token(segs []argtemplate.Segment) []string {
	if len(segs) == 1 && segs[0].Flag != "" {
		return r.flagPair(segs[0])
	}
	// The first array arg repeats the token; every absent arg drops it.
	values := make([][]string, len(segs))
	repeat, hasArg := -1, false
	for i, s := range segs {
		if s.Arg == "" {
			continue
		}
		hasArg = true
		v, ok := r.argValues(s.Arg)
		if !ok {
			return nil
		}
		values[i] = v
		if repeat < 0 && r.isArray(s.Arg) {
			repeat = i
		}
	}
	n := 1
	if repeat >= 0 {
		n = len(values[repeat])
	}
	out := make([]string, 0, n)
	for k := 0; k < n; k++ {
		var b strings.Builder
		for i, s := range segs {
			switch {
			case s.Arg != "" && i == repeat:
				b.WriteString(values[i][k])
			case s.Arg != "":
				b.WriteString(r.wholeText(s.Arg))
			case s.Placeholder != "":
				b.WriteString(r.fixed[s.Placeholder])
			default:
				b.WriteString(s.Literal)
			}
		}
		if b.Len() > 0 || hasArg {
			out = append(out, b.String())
		}
	}
	return out
}

func (r renderer) isArray(name string) bool {
	t := bytes.TrimSpace(r.args[name])
	return len(t) > 0 && t[0] == '['
}

// wholeText is an arg as one value: a non-repeating array is its JSON.
func (r renderer) wholeText(name string) string { return scalarText(r.args[name]) }

// flagPair renders {arg.NAME?FLAG}.
func (r renderer) flagPair(s argtemplate.Segment) []string {
	raw := bytes.TrimSpace(r.args[s.Arg])
	switch string(raw) {
	case "", "null", "false":
		return nil
	case "true":
		return []string{s.Flag}
	}
	vals, ok := r.argValues(s.Arg)
	if !ok {
		return nil
	}
	out := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		out = append(out, s.Flag, v)
	}
	return out
}

// stdinFor returns what the program reads on stdin for one call, per the
// binding's stdin field: nil means nothing (the program sees /dev/null).
func stdinFor(b *cliBinding, params []byte) []byte {
	if b.Stdin == argtemplate.StdinParamsJSON {
		return params
	}
	name, ok := argtemplate.StdinArg(b.Stdin)
	if !ok {
		return nil
	}
	raw, present := decodeArgs(params)[name]
	if !present || isNull(raw) {
		return nil
	}
	return []byte(scalarText(raw))
}

// childEnv builds a program's environment: the named variables inherited from
// base (KEY=VALUE entries), then the binding's env with values verbatim
// except argtemplate.BearerPlaceholder, replaced by the caller's bearer.
func childEnv(base []string, inherit []string, bindingEnv map[string]string, bearer string) []string {
	keep := make(map[string]bool, len(inherit))
	for _, k := range inherit {
		keep[k] = true
	}
	env := make([]string, 0, len(inherit)+len(bindingEnv))
	for _, kv := range base {
		if k, _, ok := strings.Cut(kv, "="); ok && keep[k] {
			if _, overridden := bindingEnv[k]; !overridden {
				env = append(env, kv)
			}
		}
	}
	for k, v := range bindingEnv {
		if v == argtemplate.BearerPlaceholder {
			v = bearer
		}
		env = append(env, k+"="+v)
	}
	return env
}
