package cli

import (
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
)

// Argv builds a program's argument vector for one call, never through a
// shell: cmd, then the binding's fixed args, then the args_template split on
// white space into tokens with placeholders substituted inside each token.
// {params_json} is the call's args as they arrived (one argv slot whatever
// it contains), {tool_id} the tool's name, {dry_run} and {page_all} the
// binding's flags when the call asks for them and empty otherwise. A token
// that renders empty is dropped; unknown placeholders pass through literally.
func Argv(b *envelope.CliBindingConfig, toolID string, params []byte, dryRun, pageAll bool) []string {
	argv := make([]string, 0, 2+len(b.Args)+4)
	argv = append(argv, b.Cmd)
	argv = append(argv, b.Args...)
	if b.ArgsTemplate == "" {
		return argv
	}
	values := map[string]string{
		"{tool_id}":     toolID,
		"{params_json}": string(params),
	}
	if dryRun {
		values["{dry_run}"] = b.DryRunFlag
	} else {
		values["{dry_run}"] = ""
	}
	if pageAll {
		values["{page_all}"] = b.PageAllFlag
	} else {
		values["{page_all}"] = ""
	}
	for _, tok := range strings.Fields(b.ArgsTemplate) {
		if r := render(tok, values); r != "" {
			argv = append(argv, r)
		}
	}
	return argv
}

// render substitutes known placeholders in one token, scanning left to
// right so text that a substitution inserts is never itself substituted.
func render(tok string, values map[string]string) string {
	var out strings.Builder
	for len(tok) > 0 {
		i := strings.IndexByte(tok, '{')
		if i < 0 {
			out.WriteString(tok)
			break
		}
		out.WriteString(tok[:i])
		tok = tok[i:]
		j := strings.IndexByte(tok, '}')
		if j < 0 {
			out.WriteString(tok)
			break
		}
		if v, ok := values[tok[:j+1]]; ok {
			out.WriteString(v)
			tok = tok[j+1:]
			continue
		}
		out.WriteByte('{')
		tok = tok[1:]
	}
	return out.String()
}

// Env builds a program's environment: the named variables inherited from
// base (KEY=VALUE entries), then the binding's env with values verbatim
// except the literal "$ATD_BEARER", replaced by the caller's bearer.
func Env(base []string, inherit []string, bindingEnv map[string]string, bearer string) []string {
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
		if v == "$ATD_BEARER" {
			v = bearer
		}
		env = append(env, k+"="+v)
	}
	return env
}
