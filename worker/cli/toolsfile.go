package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/configkeys"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/sandbox/report"
)

// defaultMaxOutputBytes is the default stdout cap: a quarter of the
// worker's default result cap (64 MiB), so the result
// built from that much output — lines escaped into JSON strings, an
// ndjson array — still fits what the mesh carries (results larger than a
// NATS message travel in chunks).
const defaultMaxOutputBytes = 16 << 20

// toolLimits bound one CLI-bound tool's runs.
type toolLimits struct {
	// Timeout bounds one run (the call's own budget bounds it further);
	// it is the spec's timeout. Zero means only the call's budget applies.
	Timeout time.Duration
	// MaxOutputBytes caps stdout; past it the program is stopped and the
	// call ends honestly (default DefaultMaxOutputBytes).
	MaxOutputBytes int64
	// MaxConcurrent bounds runs of this tool at once; further calls wait
	// for a slot within their budget (default 8).
	MaxConcurrent int
	// KillGrace is how long a program has between SIGTERM and SIGKILL (default 2s).
	KillGrace time.Duration
}

func (l toolLimits) withDefaults(d toolLimits) toolLimits {
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = defaultMaxOutputBytes
	}
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = d.MaxConcurrent
	}
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = 8
	}
	if l.KillGrace == 0 {
		l.KillGrace = d.KillGrace
	}
	if l.KillGrace == 0 {
		l.KillGrace = 2 * time.Second
	}
	return l
}

// fileTool is one entry of a tools file: the spec callers see, the
// binding that runs it and the limits the worker enforces.
type fileTool struct {
	Spec envelope.ToolSpec
	// Binding is the tool's binding.cli, kept beside the spec (which
	// leaves the worker) rather than in it.
	Binding *cliBinding
	Limits  toolLimits
	// Sandbox confines the program (see package sandbox); nil runs
	// it with the worker's own rights.
	Sandbox *sandbox.Policy
	// AllowUnconfined runs the tool unconfined, with a warning, when this
	// host cannot enforce its Sandbox; without it such a tool is refused
	// at load. Only the operator sets it (toolmesh worker
	// --allow-unconfined), never a tools file.
	AllowUnconfined bool
	// Hardening holds the binding's argument rules (arg_rules,
	// end_of_options), checked before anything runs.
	Hardening argHardening
}

// File is a loaded tools file.
type File struct {
	// tools are the file's command-line tools (an MCP server's entry is
	// not one: mcp servers are the bridge's).
	tools []fileTool
	// env lists the variables inherited from the worker's environment by
	// every program (the file's inherit_env; default PATH, HOME, LANG, TZ).
	env []string
	// warnings are what the loader tolerated but a human should see, such
	// as a misspelt binding field; RegisterFile logs them and Lint
	// reports them.
	warnings []string
	// AllowUnconfined is the operator's consent to run a sandboxed tool
	// unconfined where the host cannot confine it (see fileTool.AllowUnconfined).
	AllowUnconfined bool
}

// Specs returns the specs of the file's command-line tools, in file order,
// as the worker will serve them: a confined tool's Sandbox summarises the
// file's sandbox block (the paths its program needs to start are added at
// registration). An MCP server's entry is not among them.
func (f *File) Specs() []envelope.ToolSpec {
	out := make([]envelope.ToolSpec, 0, len(f.tools))
	for _, t := range f.tools {
		s := t.Spec
		if t.Sandbox != nil {
			s.Sandbox = report.Summary(t.Sandbox)
		}
		out = append(out, s)
	}
	return out
}

// defaultInheritedEnv is what a bound program inherits from the worker
// unless the tools file says otherwise: enough to find programs and speak
// the locale, nothing secret.
func defaultInheritedEnv() []string { return []string{"PATH", "HOME", "LANG", "TZ"} }

// fileJSON is the tools file's shape; unknown keys anywhere in the file
// are errors (configkeys.ToolsFile, checked first): a typo or a block one
// level too deep must not pass silently.
type fileJSON struct {
	Defaults *limitsJSON       `json:"defaults"`
	Env      []string          `json:"inherit_env"`
	Sandbox  json.RawMessage   `json:"sandbox"`
	Tools    []json.RawMessage `json:"tools"`
}

type limitsJSON struct {
	Timeout        envelope.Duration `json:"timeout"`
	MaxOutputBytes int64             `json:"max_output_bytes"`
	MaxConcurrent  int               `json:"max_concurrent"`
	KillGrace      envelope.Duration `json:"kill_grace"`
}

type toolJSON struct {
	Name           string                `json:"name"`
	Title          string                `json:"title"`
	Description    string                `json:"description"`
	Version        string                `json:"version"`
	InputSchema    json.RawMessage       `json:"input_schema"`
	OutputSchema   json.RawMessage       `json:"output_schema"`
	Annotations    *envelope.Annotations `json:"annotations"`
	Streaming      bool                  `json:"streaming"`
	Tags           []string              `json:"tags"`
	Timeout        envelope.Duration     `json:"timeout"`
	MaxOutputBytes int64                 `json:"max_output_bytes"`
	MaxConcurrent  int                   `json:"max_concurrent"`
	KillGrace      envelope.Duration     `json:"kill_grace"`
	Binding        *struct {
		CLI json.RawMessage `json:"cli"`
		// MCP binds a whole MCP server; package mcp/bridge reads it.
		MCP json.RawMessage `json:"mcp"`
	} `json:"binding"`
	Namespace string `json:"namespace"` // with binding.mcp
	// Sandbox overrides the file's default sandbox (the word unconfined
	// opts out of it).
	Sandbox json.RawMessage `json:"sandbox"`
}

// LoadFile reads and validates a tools file. Any error is an
// invalid_config Problem naming the file, the tool and the field; nothing
// half-loads.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tools file: %v", err)
	}
	f, err := Parse(data)
	if err != nil {
		var p *envelope.Problem
		if errors.As(err, &p) {
			p.Detail = path + ": " + p.Detail
			return nil, p
		}
		return nil, err
	}
	return f, nil
}

// Parse validates a tools file's contents (YAML, or JSON, which is YAML).
// bad is the invalid_config Problem of a tools file.
func bad(format string, args ...any) error {
	return envelope.Problemf(envelope.CodeInvalidConfig, format, args...)
}

// keysError is the invalid_config Problem of an unknown key; one inside
// tools[i] is named after the tool as the loader's other errors are:
// "tools[0] (ls): unknown field "sandbox" in binding.cli: …".
func keysError(err error, doc any) error {
	var ue *configkeys.UnknownKeyError
	if !errors.As(err, &ue) {
		return bad("%v", err)
	}
	var i int
	top, _ := doc.(map[string]any)
	tools, _ := top["tools"].([]any)
	if n, _ := fmt.Sscanf(ue.Where, "tools[%d]", &i); n != 1 || i < 0 || i >= len(tools) {
		return bad("%v", err)
	}
	prefix := fmt.Sprintf("tools[%d]", i)
	rawTool, _ := json.Marshal(tools[i])
	e := *ue
	e.Where = strings.TrimPrefix(strings.TrimPrefix(ue.Where, prefix), ".")
	return bad("%s: %v", toolLabel(i, rawTool), &e)
}

// toolLabel names tools[i] in messages, with its name when it has one.
func toolLabel(i int, rawTool json.RawMessage) string {
	var head struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(rawTool, &head) == nil && head.Name != "" {
		return fmt.Sprintf("tools[%d] (%s)", i, head.Name)
	}
	return fmt.Sprintf("tools[%d]", i)
}

// parseTool decodes and checks tools[i]; a nil fileTool and nil error mean an
// MCP server's entry, which mcp/bridge hosts.
func parseTool(i int, rawTool json.RawMessage, defaults toolLimits, defaultBox *sandbox.Policy) (*fileTool, []string, error) {
	label := toolLabel(i, rawTool)
	var tj toolJSON
	if err := strictDecode(rawTool, &tj); err != nil {
		return nil, nil, bad("%s: %s", label, decodeError(rawTool, err, jsonFields(toolJSON{})))
	}
	box, err := toolSandbox(tj.Sandbox, defaultBox)
	if err != nil {
		return nil, nil, bad("%s: %v", label, err)
	}
	if tj.Binding != nil && len(tj.Binding.MCP) > 0 && len(tj.Binding.CLI) == 0 {
		return nil, nil, nil
	}
	if tj.Binding == nil || len(tj.Binding.CLI) == 0 {
		return nil, nil, bad("%s: field binding.cli is required", label)
	}
	var cliCfg cliBinding
	if err := json.Unmarshal(tj.Binding.CLI, &cliCfg); err != nil {
		msg := strings.TrimPrefix(err.Error(), "cli binding: ")
		if rest, ok := strings.CutPrefix(msg, "field "); ok {
			return nil, nil, bad("%s: field binding.cli.%s", label, rest)
		}
		return nil, nil, bad("%s: field binding.cli: %s", label, msg)
	}
	spec := envelope.ToolSpec{Name: tj.Name, Title: tj.Title, Description: tj.Description, Version: tj.Version,
		InputSchema: tj.InputSchema, OutputSchema: tj.OutputSchema, Annotations: tj.Annotations,
		Streaming: tj.Streaming, Tags: tj.Tags, Timeout: tj.Timeout}
	if err := spec.Validate(); err != nil {
		return nil, nil, bad("%s: %v", label, err)
	}
	refWarnings, err := checkArgRefs(label, spec, &cliCfg)
	if err != nil {
		return nil, nil, bad("%s: %v", label, err)
	}
	hard, err := parseHardening(tj.Binding.CLI, spec)
	if err != nil {
		return nil, nil, bad("%s: %v", label, err)
	}
	if tj.MaxOutputBytes < 0 || tj.MaxConcurrent < 0 {
		return nil, nil, bad("%s: limits must not be negative", label)
	}
	lim := toolLimits{Timeout: time.Duration(tj.Timeout), MaxOutputBytes: tj.MaxOutputBytes, MaxConcurrent: tj.MaxConcurrent,
		KillGrace: time.Duration(tj.KillGrace)}
	return &fileTool{Spec: spec, Binding: &cliCfg, Limits: lim.withDefaults(defaults), Sandbox: box, Hardening: hard}, refWarnings, nil
}

func Parse(data []byte) (*File, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, bad("not valid YAML: %v", err)
	}
	doc = jsonable(doc)
	if err := configkeys.Check(doc, configkeys.ToolsFile()); err != nil {
		return nil, keysError(err, doc) // every key, binding.cli's too: a misplaced one must not silently weaken the tool
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, bad("%v", err)
	}
	var fj fileJSON
	if err := strictDecode(raw, &fj); err != nil {
		return nil, bad("%s", decodeError(raw, err, append(jsonFields(fileJSON{}), jsonFields(limitsJSON{})...)))
	}
	if len(fj.Tools) == 0 {
		return nil, bad("field tools: no tools are defined")
	}
	var defaults toolLimits
	if d := fj.Defaults; d != nil {
		defaults = toolLimits{Timeout: time.Duration(d.Timeout), MaxOutputBytes: d.MaxOutputBytes, MaxConcurrent: d.MaxConcurrent,
			KillGrace: time.Duration(d.KillGrace)}
		if d.MaxOutputBytes < 0 || d.MaxConcurrent < 0 {
			return nil, bad("field defaults: limits must not be negative")
		}
	}
	var defaultBox *sandbox.Policy
	if len(fj.Sandbox) > 0 {
		box, unconfined, err := sandbox.Decode(fj.Sandbox)
		if err != nil || unconfined {
			if err == nil {
				err = errors.New("sandbox: unconfined is a tool's opt-out of the default; leave the default out instead")
			}
			return nil, bad("field %v", err)
		}
		defaultBox = box
	}
	out := &File{env: fj.Env}
	if out.env == nil {
		out.env = defaultInheritedEnv()
	}
	seen := map[string]int{}
	for i, rawTool := range fj.Tools {
		t, warnings, err := parseTool(i, rawTool, defaults, defaultBox)
		if err != nil || t == nil {
			if err != nil {
				return nil, err
			}
			continue // an MCP server's tools: hosted by mcp/bridge
		}
		if j, dup := seen[t.Spec.Name]; dup {
			return nil, bad("%s: field name: %q is already defined by tools[%d]", toolLabel(i, rawTool), t.Spec.Name, j)
		}
		seen[t.Spec.Name] = i
		out.warnings = append(out.warnings, warnings...)
		out.tools = append(out.tools, *t)
	}
	return out, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jsonable converts a YAML document into values encoding/json accepts:
// mappings with non-string keys (exit_code_map's integers) get string keys.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = jsonable(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonable(x)
		}
		return out
	case time.Time:
		return t.Format(time.RFC3339Nano)
	}
	return v
}

// toolSandbox is a tool's sandbox: its own block, the file's default when
// it has none, nil when it says unconfined or neither is set.
func toolSandbox(raw json.RawMessage, fileDefault *sandbox.Policy) (*sandbox.Policy, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return fileDefault, nil
	}
	box, _, err := sandbox.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("field %v", err)
	}
	return box, nil
}
