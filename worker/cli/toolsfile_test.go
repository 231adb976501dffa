package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/configkeys"
)

const goodFile = `
defaults: {timeout: 30s, max_output_bytes: 1048576, kill_grace: 5m}
inherit_env: [PATH, HOME]
tools:
  - name: files.search
    description: Search files for a pattern
    input_schema: {type: object, properties: {pattern: {type: string}}, required: [pattern], additionalProperties: false}
    annotations: {read_only: true}
    max_concurrent: 2
    binding:
      cli:
        cmd: rg
        args: ["--json"]
        args_template: "{params_json} {dry_run} {page_all}"
        env: {API_TOKEN: "$ATD_BEARER"}
        output_format: ndjson
        dry_run_flag: --dry-run
        page_all_flag: --all
        exit_code_map: {2: invalid_args, 3: auth_required}
  - name: cat
    timeout: 5s
    kill_grace: 10s
    binding: {cli: {cmd: cat}}
`

func TestParseGoodFile(t *testing.T) {
	f, err := Parse([]byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.tools) != 2 || strings.Join(f.env, ",") != "PATH,HOME" {
		t.Fatalf("file %+v", f)
	}
	s := f.tools[0]
	b := s.Binding
	if b.Cmd != "rg" || b.ExitCodeMap[2] != "invalid_args" || b.ExitCodeMap[3] != "auth_required" || outputFormat(b) != outputNDJSON ||
		b.Env["API_TOKEN"] != "$ATD_BEARER" || !s.Spec.Annotations.IsReadOnly() {
		t.Fatalf("tool 0 %+v %+v", s.Spec, b)
	}
	if s.Limits.Timeout != 30*time.Second || s.Limits.MaxOutputBytes != 1<<20 || s.Limits.MaxConcurrent != 2 || s.Limits.KillGrace != 5*time.Minute {
		t.Errorf("limits %+v", s.Limits)
	}
	if f.tools[1].Limits.Timeout != 5*time.Second || f.tools[1].Limits.KillGrace != 10*time.Second || outputFormat(f.tools[1].Binding) != outputJSON {
		t.Errorf("tool 1 %+v", f.tools[1])
	}
}

// Every invalid file fails with invalid_config naming the tool and the field.
func TestParseErrors(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"not yaml", "tools: [", "not valid YAML"},
		{"no tools", "tools: []", "field tools"},
		{"unknown top field", "tool: []", `unknown field "tool"`},
		{"missing cmd", "tools: [{name: a, binding: {cli: {args: [x]}}}]", "tools[0] (a): field binding.cli.cmd is required"},
		{"no binding", "tools: [{name: a}]", "tools[0] (a): field binding.cli"},
		{"bad format", "tools: [{name: a, binding: {cli: {cmd: x, output_format: xml}}}]", "tools[0] (a): field binding.cli.output_format"},
		{"bad exit key", "tools: [{name: a, binding: {cli: {cmd: x, exit_code_map: {two: y}}}}]", "tools[0] (a): field binding.cli.exit_code_map"},
		{"typo", "tools: [{name: a, descripton: x, binding: {cli: {cmd: x}}}]", `tools[0] (a): unknown field "descripton" (did you mean description?)`},
		{"bad name", "tools: [{name: 'a b', binding: {cli: {cmd: x}}}]", "tools[0] (a b)"},
		{"duplicate", "tools: [{name: a, binding: {cli: {cmd: x}}}, {name: a, binding: {cli: {cmd: y}}}]", "tools[1] (a): field name"},
		{"schema not object", "tools: [{name: a, input_schema: {type: string}, binding: {cli: {cmd: x}}}]", "field input_schema"},
		{"bad timeout", "tools: [{name: a, timeout: soon, binding: {cli: {cmd: x}}}]", "tools[0] (a): field timeout"},
		{"bad kill grace", "tools: [{name: a, kill_grace: -1s, binding: {cli: {cmd: x}}}]", "tools[0] (a): field kill_grace"},
		{"sandbox idle is gone", "tools: [{name: a, sandbox_idle: 1m, binding: {cli: {cmd: x}}}]", `tools[0] (a): unknown field "sandbox_idle"`},
		{"bad default kill grace", "defaults: {kill_grace: soon}\ntools: [{name: a, binding: {cli: {cmd: x}}}]", "field defaults.kill_grace"},
		{"bad default timeout", "defaults: {timeout: soon}\ntools: [{name: a, binding: {cli: {cmd: x}}}]", "field defaults.timeout"},
		{"wrong type", "tools: [{name: a, max_concurrent: many, binding: {cli: {cmd: x}}}]", "tools[0] (a): field max_concurrent"},
		{"typo suggestion", "tools: [{name: a, input_shema: {}, binding: {cli: {cmd: x}}}]", "did you mean input_schema?"},
		{"binding field type", "tools: [{name: a, binding: {cli: {cmd: x, args: y}}}]", "tools[0] (a): field binding.cli.args: want []string, got a JSON string"},
		{"binding env type", "tools: [{name: a, binding: {cli: {cmd: x, env: {A: 1}}}}]", "tools[0] (a): field binding.cli.env: want string, got a JSON number"},
		{"bad stdin", "tools: [{name: a, binding: {cli: {cmd: x, stdin: args}}}]", "tools[0] (a): field binding.cli.stdin"},
		{"pair inside a token", "tools: [{name: a, binding: {cli: {cmd: x, args_template: 'x{arg.n?-n}'}}}]", "tools[0] (a): field binding.cli.args_template"},
		{"arg not in schema", "tools: [{name: a, input_schema: {type: object, properties: {pattern: {type: string}}, additionalProperties: false}, binding: {cli: {cmd: x, args_template: '{arg.patern}'}}}]",
			"tools[0] (a): field binding.cli.args_template: arg.patern names no property of input_schema (did you mean arg.pattern?)"},
		{"stdin arg not in schema", "tools: [{name: a, input_schema: {type: object, properties: {text: {type: string}}, additionalProperties: false}, binding: {cli: {cmd: x, stdin: arg.txt}}}]",
			"tools[0] (a): field binding.cli.stdin: arg.txt"},
		{"unknown binding field", "tools: [{name: a, binding: {cli: {cmd: x, some_future_field: y}}}]",
			`tools[0] (a): unknown field "some_future_field" in binding.cli (the nearest valid key is `},
		{"misplaced sandbox", "tools: [{name: a, binding: {cli: {cmd: x, sandbox: {network: none}}}}]",
			`tools[0] (a): unknown field "sandbox" in binding.cli: sandbox is not valid there; it belongs at tools[0].sandbox`},
		{"misplaced limit", "tools: [{name: a, binding: {cli: {cmd: x, timeout: 5s}}}]",
			`tools[0] (a): unknown field "timeout" in binding.cli: timeout is not valid there; it belongs at tools[0].timeout`},
		{"annotation hint spelling", "tools: [{name: a, annotations: {idempotentHint: true}, binding: {cli: {cmd: x}}}]",
			`tools[0] (a): unknown field "idempotentHint" in annotations (did you mean idempotent?)`},
		{"arg rule typo", "tools: [{name: a, binding: {cli: {cmd: x, arg_rules: {p: {nodash: true}}}}}]",
			`tools[0] (a): unknown field "nodash" in binding.cli.arg_rules.p (did you mean no_dash?)`},
		{"default limit typo", "defaults: {kill_grase: 1s}\ntools: [{name: a, binding: {cli: {cmd: x}}}]",
			`unknown field "kill_grase" in defaults (did you mean kill_grace?)`},
		{"mcp binding typo", "tools: [{namespace: m, binding: {mcp: {comand: x}}}]",
			`tools[0]: unknown field "comand" in binding.mcp (did you mean command?)`},
		{"negative cap", "tools: [{name: a, max_output_bytes: -1, binding: {cli: {cmd: x}}}]", "tools[0] (a): limits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file))
			var p *envelope.Problem
			if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig {
				t.Fatalf("want invalid_config, got %v", err)
			}
			if !strings.Contains(p.Detail, c.want) {
				t.Errorf("detail %q does not contain %q", p.Detail, c.want)
			}
		})
	}
}

func TestLoadFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.yaml")
	_ = os.WriteFile(path, []byte("tools: []"), 0o644)
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not name the file", err)
	}
	if _, err := LoadFile(path + ".missing"); err == nil {
		t.Error("a missing file loaded")
	}
}

// Unknown binding fields are errors naming the tool, the field and the
// closest known one: a typo must not pass silently.
func TestBindingFieldWarnings(t *testing.T) {
	for file, want := range map[string]string{
		"tools: [{name: a, binding: {cli: {cmd: x, output_fromat: lines}}}]": `tools[0] (a): unknown field "output_fromat" in binding.cli (did you mean output_format?)`,
		"tools: [{name: a, binding: {cli: {cmd: x, frobnicate: 1}}}]":        `tools[0] (a): unknown field "frobnicate" in binding.cli (the nearest valid key is`,
	} {
		f, err := Parse([]byte(file))
		var p *envelope.Problem
		if !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig || !strings.Contains(p.Detail, want) {
			t.Errorf("%s: loaded %v, error %v; want invalid_config containing %q", file, f, err, want)
		}
	}
	open, err := Parse([]byte("tools: [{name: a, input_schema: {type: object, properties: {text: {type: string}}}, binding: {cli: {cmd: x, stdin: arg.txt}}}]"))
	if err != nil || len(open.warnings) != 1 || !strings.Contains(open.warnings[0], "tools[0] (a): field binding.cli.stdin: arg.txt names no property of input_schema (did you mean arg.text?)") {
		t.Errorf("an arg outside an open schema: %v %q", err, open.warnings)
	}
	clean, err := Parse([]byte("tools: [{name: a, binding: {cli: {cmd: x, stdin: params_json, output_format: lines}}}]"))
	if err != nil || len(clean.warnings) != 0 {
		t.Errorf("a clean binding: %v %q", err, clean.warnings)
	}
}

// The key check knows every field the loader decodes, so no valid key is
// refused: a field added to the loader must be added to the shape too.
func TestToolsFileShapeMatchesTheLoader(t *testing.T) {
	shape := configkeys.ToolsFile()
	tool := shape.Fields["tools"].Each
	for _, c := range []struct {
		where string
		node  *configkeys.Node
		want  []string
	}{
		{"file", shape, jsonFields(fileJSON{})},
		{"defaults", shape.Fields["defaults"], jsonFields(limitsJSON{})},
		{"tool", tool, jsonFields(toolJSON{})},
		{"binding.cli", tool.Fields["binding"].Fields["cli"], append(argtemplate.BindingFields(), hardeningFields()...)},
		{"arg_rules.NAME", tool.Fields["binding"].Fields["cli"].Fields["arg_rules"].AnyKey, jsonFields(argRule{})},
	} {
		var got []string
		for k := range c.node.Fields {
			got = append(got, k)
		}
		sort.Strings(got)
		want := append([]string(nil), c.want...)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: the shape has %v, the loader reads %v", c.where, got, want)
		}
	}
}

// A binding that names no output format, read from JSON with a field of a
// later version, is run as json.
func TestOutputFormatDefaultsToJSON(t *testing.T) {
	var c cliBinding
	if err := json.Unmarshal([]byte(`{"cmd":"cat","future_field":{"x":1}}`), &c); err != nil || c.Cmd != "cat" {
		t.Fatalf("unknown fields must be tolerated: %v", err)
	}
	if got := outputFormat(&c); got != outputJSON {
		t.Errorf("default output format = %q, want json", got)
	}
}
