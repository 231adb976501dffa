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
