package tests

import (
	"strings"
	"testing"
)

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

// An answer that does not fit the question's schema says so in English.
func TestCommandAnswerMismatchWording(t *testing.T) {
	_, url := startDev(t)
	r := runCmd(t, "", "call", "remove", "--server", url, "--args", `{"path":"/tmp/x"}`, "--answer", `{"confirm":"yes"}`)
	if r.code != 2 || !strings.Contains(r.stderr, "answer does not match the schema") {
		t.Errorf("exit %d, stderr %s; want invalid_input saying the answer does not match the schema", r.code, r.stderr)
	}
}
