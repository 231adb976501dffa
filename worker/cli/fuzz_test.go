package cli

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolmesh/toolmesh/envelope"
)

// FuzzParse feeds the tools-file loader arbitrary YAML: it either loads a
// file whose every tool passed validation, or fails with an invalid_config
// Problem. It never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodFile))
	f.Add([]byte("tools: []"))
	f.Add([]byte("tools:\n  - name: x\n    binding: {cli: {cmd: cat}}\n"))
	f.Add([]byte("tools:\n  - name: x\n    binding: {cli: {cmd: cat, exit_code_map: {a: b}}}\n"))
	f.Add([]byte("tools: [{name: x, timeout: -1s, binding: {cli: {cmd: cat}}}]"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var p *envelope.Problem
			if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig {
				t.Fatalf("error is not an invalid_config Problem: %v", err)
			}
			return
		}
		for _, tool := range file.tools {
			if err := envelope.ValidateToolName(tool.Spec.Name); err != nil {
				t.Fatalf("loaded a tool with an invalid name %q", tool.Spec.Name)
			}
			if tool.Binding == nil || tool.Binding.Cmd == "" {
				t.Fatalf("loaded tool %q without a cmd", tool.Spec.Name)
			}
		}
	})
}

// FuzzArgv checks the argv rules for any template and any params: cmd and
// the fixed args come first and unchanged, no slot is empty, and a
// template token that is exactly {params_json} yields exactly the params,
// byte for byte, as one slot.
func FuzzArgv(f *testing.F) {
	f.Add("{params_json}", `{"q":"a b; $(rm -rf /) \"x\"\n"}`, "--dry-run", true)
	f.Add("--id={tool_id} {params_json} {dry_run} {page_all} {unknown}", `{}`, "", false)
	f.Add("{{params_json}} {params_json}{params_json}", `{"a":"{dry_run}"}`, "-n", true)
	f.Fuzz(func(t *testing.T, template, params, flag string, on bool) {
		b := &cliBinding{Cmd: "prog", Args: []string{"--fixed"}, ArgsTemplate: template,
			DryRunFlag: flag, PageAllFlag: flag}
		argv := buildArgv(b, "tool.x", []byte(params), on, on)
		if len(argv) < 2 || argv[0] != "prog" || argv[1] != "--fixed" {
			t.Fatalf("argv %q does not start with the cmd and fixed args", argv)
		}
		rendered := argv[2:]
		// Only a present arg whose value is "" keeps an empty slot.
		if slices.Contains(rendered, "") && !strings.Contains(template, "{arg.") {
			t.Fatalf("argv %q has an empty slot", argv)
		}
		// Each whole-token {params_json} contributes one slot equal to params.
		want := 0
		for _, tok := range strings.Fields(template) {
			if tok == "{params_json}" && params != "" {
				want++
			}
		}
		got := 0
		for _, a := range rendered {
			if a == params {
				got++
			}
		}
		if got < want {
			t.Fatalf("template %q, params %q: %d slots equal the params, want at least %d: %q", template, params, got, want, argv)
		}
	})
}

// FuzzArgPlaceholders checks the per-argument placeholders and stdin for
// any value: {arg.v} as a whole token is exactly the value in one slot,
// the pair {arg.v?FLAG} is FLAG then the value, the value is stdin byte for
// byte, and nothing in the value is ever substituted again.
func FuzzArgPlaceholders(f *testing.F) {
	f.Add("{arg.v}", "; rm -rf / #", "-e")
	f.Add("{arg.v?-e} {arg.v}", "{arg.v}", "--regexp")
	f.Add("x{arg.v}y {params_json}", "$(id)\n", "-x")
	f.Add("{arg.v}{arg.v}", "", "-n")
	f.Fuzz(func(t *testing.T, prefix, value, flag string) {
		if flag == "" || strings.ContainsAny(flag, "{} \t\n\r\v\f\u0085\u00a0") || !utf8.ValidString(value) {
			return
		}
		params, _ := json.Marshal(map[string]string{"v": value})
		b := &cliBinding{Cmd: "p", ArgsTemplate: prefix + " {arg.v} {arg.v?" + flag + "}", Stdin: "arg.v"}
		argv := buildArgv(b, "t", params, false, false)
		if len(argv) < 4 || argv[len(argv)-3] != value || argv[len(argv)-2] != flag || argv[len(argv)-1] != value {
			t.Fatalf("template %q value %q: argv ends %q, want [%q %q %q]", b.ArgsTemplate, value, argv, value, flag, value)
		}
		if got := stdinFor(b, params); string(got) != value {
			t.Fatalf("stdin %q, want %q", got, value)
		}
	})
}
