package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// bindingTools binds grep, wc and jq with per-argument placeholders and
// stdin: no shell anywhere, no script around the programs.
const bindingTools = `
tools:
  - name: text.grep
    description: Lines of a text that match a pattern
    input_schema:
      type: object
      properties: {pattern: {type: string}, text: {type: string}, ignore_case: {type: boolean}, fixed: {type: boolean}}
      required: [pattern, text]
      additionalProperties: false
    binding:
      cli:
        cmd: grep
        args_template: "{arg.ignore_case?-i} {arg.fixed?-F} {arg.pattern?-e}"
        stdin: arg.text
        output_format: lines
        exit_code_map: {1: ok_empty, 2: invalid_input}
  - name: text.wc
    description: Count the lines, words or bytes of a text
    input_schema:
      type: object
      properties: {text: {type: string}, count: {enum: [lines, words, bytes]}}
      required: [text, count]
    binding:
      cli: {cmd: wc, args_template: "--{arg.count}", stdin: arg.text}
  - name: json.query
    description: Run a jq filter over a JSON value
    input_schema:
      type: object
      properties: {filter: {type: string}, input: {}}
      required: [filter]
    binding:
      cli: {cmd: jq, args_template: "-c {arg.filter}", stdin: arg.input, output_format: ndjson, exit_code_map: {3: invalid_input, 5: query_failed}}
  - name: echo.argv
    description: Each string as one argv slot, echoed back by jq
    input_schema: {type: object, properties: {list: {type: array, items: {type: string}}}}
    binding:
      cli: {cmd: jq, args_template: "-n -c $ARGS.positional --args -- {arg.list}"}
  - name: echo.stdin
    description: A string fed as stdin, echoed back by jq
    input_schema: {type: object, properties: {v: {type: string}}}
    binding:
      cli: {cmd: jq, args: ["-R", "-s", "-c", "."], stdin: arg.v}
`

func requirePrograms(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed (apt-get install -y %s; .ci/run installs it)", n, n)
		}
	}
}

func startBindingMesh(t *testing.T) string {
	t.Helper()
	requirePrograms(t, "grep", "wc", "jq")
	path := writeTools(t, bindingTools)
	_, url := startDev(t, "--config", path)
	return url
}

func callJSON(t *testing.T, url, tool string, args any) result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return runCmd(t, "", "call", tool, "--server", url, "--args", string(b))
}

// grep, wc and jq answer through placeholders and stdin, with their exit
// codes mapped: grep's "no match" is an empty result, a bad pattern or
// filter is invalid_input with its exit code.
func TestBindingRealPrograms(t *testing.T) {
	url := startBindingMesh(t)
	text := "alpha one\nBeta two\ngamma three\n"
	cases := []struct {
		name, tool string
		args       map[string]any
		stdout     string // the Response without its id
		code       int
	}{
		{"grep", "text.grep", map[string]any{"pattern": "^[ab]", "text": text, "ignore_case": true},
			`"success":true,"lines":["alpha one","Beta two"],"stderr":""}`, 0},
		{"grep fixed", "text.grep", map[string]any{"pattern": "a t", "text": text, "fixed": true},
			`"success":true,"lines":["Beta two","gamma three"],"stderr":""}`, 0},
		{"grep no match", "text.grep", map[string]any{"pattern": "delta", "text": text},
			`"success":true,"lines":[],"stderr":""}`, 0},
		{"grep bad pattern", "text.grep", map[string]any{"pattern": "[", "text": text},
			`"success":false,"code":"invalid_input"`, 2},
		{"wc lines", "text.wc", map[string]any{"text": text, "count": "lines"}, `"success":true,"result":3}`, 0},
		{"wc words", "text.wc", map[string]any{"text": text, "count": "words"}, `"success":true,"result":6}`, 0},
		{"jq", "json.query", map[string]any{"filter": ".items[] | select(.n > 1) | .name", "input": map[string]any{"items": []any{map[string]any{"n": 1, "name": "a"}, map[string]any{"n": 2, "name": "b; rm -rf /"}}}},
			`"success":true,"result":["b; rm -rf /"]}`, 0},
		{"jq bad filter", "json.query", map[string]any{"filter": ".[", "input": 1}, `"success":false,"code":"invalid_input"`, 2},
		// A domain code: kept as the code, under the generic tool-failed type and exit code.
		{"jq runtime error", "json.query", map[string]any{"filter": `error("boom")`, "input": 1},
			`"success":false,"code":"query_failed","message":"tool json.query exited with code 5 (query_failed)","problem":{"type":"https://toolmesh.dev/problems/tool-failed/v1","title":"Tool failed","status":502`, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := callJSON(t, url, c.tool, c.args)
			if r.code != c.code || !strings.Contains(r.stdout, c.stdout) {
				t.Fatalf("exit %d (want %d)\nstdout %s\nwant it to contain %s\nstderr %s", r.code, c.code, r.stdout, c.stdout, r.stderr)
			}
		})
	}
}

// The injection corpus passes through {arg.x} and through stdin byte for
// byte, each value one argv slot, and nothing reaches a shell.
func TestBindingInjectionCorpus(t *testing.T) {
	url := startBindingMesh(t)
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	corpus := []string{
		`; touch ` + pwned + ` #`, `$(touch ` + pwned + `)`, "`touch " + pwned + "`", `| touch ` + pwned, `&& touch ` + pwned,
		`"quoted" 'single'`, "line1\nline2\r\n", `--help`, `-rf`, `--`, `a b	c`, `\\server\share`, `${PATH}`, `>/dev/null 2>&1`,
		`*`, `~`, "unicode: é ✓ 日本 😀 \u202e", "\x01\x1f control", strings.Repeat("long ", 4000), `{"nested":"json"}`, ``,
		`{arg.list}`, `{params_json}`, `{tool_id}`, `{arg.v?-e}`,
	}
	r := callJSON(t, url, "echo.argv", map[string]any{"list": corpus})
	var got struct {
		Result []string `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("echo.argv: exit %d stdout %.300s stderr %s", r.code, r.stdout, r.stderr)
	}
	if fmt.Sprintf("%q", got.Result) != fmt.Sprintf("%q", corpus) {
		t.Fatalf("argv slots changed:\n got %.500q\nwant %.500q", got.Result, corpus)
	}
	for i, v := range corpus {
		r := callJSON(t, url, "echo.stdin", map[string]any{"v": v})
		var out struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.Result != v {
			t.Fatalf("case %d through stdin: exit %d, got %.200q want %.200q (stderr %s)", i, r.code, out.Result, v, r.stderr)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a corpus value reached a shell: the marker file exists")
	}
}

// A misspelt binding field stops dev at load with an error that suggests
// the right name, and so does a program that is not installed.
func TestBindingLoadChecks(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.yaml")
	_ = os.WriteFile(typo, []byte("tools: [{name: t, binding: {cli: {cmd: cat, output_fromat: lines}}}]"), 0o644)
	if r := runCmd(t, "", "dev", "--listen", "127.0.0.1:0", "--config", typo); r.code != 78 ||
		!regexp.MustCompile(`did you mean output_format\?`).MatchString(r.stderr) {
		t.Fatalf("a misspelt binding field: exit %d stderr %s", r.code, r.stderr)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_ = os.WriteFile(missing, []byte("tools: [{name: files.find, binding: {cli: {cmd: toolmesh-not-installed}}}]"), 0o644)
	r := runCmd(t, "", "dev", "--listen", "127.0.0.1:0", "--config", missing, "--format", "json")
	var prob envelope.Problem
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &prob); err != nil || prob.Code != envelope.CodeInvalidConfig ||
		!strings.Contains(prob.Detail, "tool files.find: field binding.cli.cmd") {
		t.Fatalf("exit %d stderr %s", r.code, r.stderr)
	}
}
