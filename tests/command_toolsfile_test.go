package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// A tools file with an unknown or misplaced key is refused by every
// command that reads it: worker and dev exit 78 (invalid_config) naming
// the key and the nearest valid one, before anything runs unconfined,
// and tools lint reports the same error.
func TestCommandToolsFileUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, file, want string }{
		{"sandbox under binding.cli", `
tools:
  - name: ls
    binding:
      cli:
        cmd: ls
        sandbox: {read: [/usr], network: none}
`, `unknown field "sandbox" in binding.cli: sandbox is not valid there; it belongs at tools[0].sandbox`},
		{"annotation typo", `
tools:
  - name: ls
    annotations: {idempotentHint: true}
    binding: {cli: {cmd: ls}}
`, `unknown field "idempotentHint" in annotations (did you mean idempotent?)`},
		{"file-level typo", `
sandboxx: {network: none}
tools:
  - {name: ls, binding: {cli: {cmd: ls}}}
`, `unknown field "sandboxx" (did you mean sandbox?)`},
		{"mcp binding typo", `
tools:
  - namespace: fs
    binding: {mcp: {comand: npx}}
`, `unknown field "comand" in binding.mcp (did you mean command?)`},
	}
	info, _ := codes.Lookup(envelope.CodeInvalidConfig)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, c.name+".yaml")
			if err := os.WriteFile(cfg, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"worker", "--config", cfg, "--server", "nats://127.0.0.1:1"},
				{"dev", "--listen", "127.0.0.1:0", "--config", cfg},
				{"tools", "lint", cfg},
			} {
				r := runCmd(t, "", args...)
				var p envelope.Problem
				if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &p); err != nil {
					t.Fatalf("%s: stderr is not one Problem: %q", args[0], r.stderr)
				}
				if r.code != info.ExitCode || p.Code != envelope.CodeInvalidConfig || !strings.Contains(p.Detail, c.want) {
					t.Errorf("case %d, %s: exit %d, %s: %s; want exit %d naming %q", i, args[0], r.code, p.Code, p.Detail, info.ExitCode, c.want)
				}
			}
		})
	}
}

// A value refused by a binding's arg_rules (no_dash, under) is refused
// before the program starts: the Problem says ran "no", so an agent knows
// a retry cannot have done the work twice, and the program never ran.
func TestCommandArgRulesRefusalDidNotRun(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "ran")
	cfg := filepath.Join(dir, "tools.yaml")
	_ = os.WriteFile(cfg, []byte(`
tools:
  - name: guarded
    input_schema: {type: object, properties: {path: {type: string}, n: {type: integer}}}
    sandbox: unconfined
    binding:
      cli:
        cmd: sh
        args: ["-c", 'echo "$@" >> `+mark+`', sh]
        args_template: "{arg.n} {arg.path}"
        output_format: lines
        end_of_options: true
        arg_rules: {path: {no_dash: true, under: `+root+`}, n: {no_dash: true}}
`), 0o644)
	_, url := startDev(t, "--config", cfg)
	info, _ := codes.Lookup(envelope.CodeInvalidInput)
	for _, args := range []string{`{"path":"-rf"}`, `{"path":"../../etc/passwd"}`, `{"n":-5,"path":"in.txt"}`} {
		r := runCmd(t, "", "call", "guarded", "--server", url, "--args", args)
		var p envelope.Problem
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &p); err != nil {
			t.Fatalf("%s: stderr is not a Problem: %q", args, r.stderr)
		}
		if r.code != info.ExitCode || p.Code != envelope.CodeInvalidInput || p.Ran() != envelope.RanNo {
			t.Errorf("%s: exit %d, code %s, ran %q; want invalid_input with ran \"no\": %s", args, r.code, p.Code, p.Ran(), r.stderr)
		}
		if _, err := os.Stat(mark); !os.IsNotExist(err) {
			t.Fatalf("%s: the program ran before the refusal", args)
		}
	}
	// A value the rules accept runs, so the refusals above were the rules'.
	if r := runCmd(t, "", "call", "guarded", "--server", url, "--args", `{"n":3,"path":"in.txt"}`); r.code != 0 {
		t.Fatalf("accepted call: %+v", r)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the accepted call did not run the program: %v", err)
	}
}

// tools lint does not flag a boolean flag pair ({arg.ignore_case?-i}
// renders -i alone), while a string flag pair, whose value follows the
// flag, is still flagged.
func TestCommandLintBooleanFlagPair(t *testing.T) {
	cfg := writeTools(t, `
tools:
  - name: text.grep
    input_schema: {type: object, properties: {pattern: {type: string}, text: {type: string}, ignore_case: {type: boolean}}, required: [pattern, text]}
    sandbox: {}
    binding:
      cli:
        cmd: grep
        args_template: "{arg.ignore_case?-i} {arg.pattern?-e}"
        stdin: arg.text
        output_format: lines
        exit_code_map: {1: ok_empty, 2: invalid_input}
`)
	r := runCmd(t, "", "tools", "lint", cfg)
	if r.code != 0 {
		t.Fatalf("lint: exit %d, stderr %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "ignore_case") {
		t.Errorf("lint flags the boolean flag pair:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "the value of pattern follows -e") {
		t.Errorf("lint no longer flags the string flag pair:\n%s", r.stdout)
	}
}
