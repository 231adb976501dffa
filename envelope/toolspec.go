package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// maxToolNameLen is the longest tool name the wire protocol allows.
const maxToolNameLen = 128

// ValidateToolName checks a tool name: dot-separated segments of 1-64
// characters from [A-Za-z0-9_-], at most 128 characters in all. Names are
// case-sensitive and become NATS subject tokens, hence the strict alphabet.
func ValidateToolName(name string) error {
	if name == "" {
		return errors.New("tool name is empty")
	}
	if len(name) > maxToolNameLen {
		return fmt.Errorf("tool name %.20q… is %d characters, more than %d", name, len(name), maxToolNameLen)
	}
	// One pass, no allocation: this runs on every call.
	seg := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if seg == 0 || seg > 64 {
				return fmt.Errorf("tool name %q: each dot-separated segment must be 1-64 characters", name)
			}
			seg = 0
			continue
		}
		if !isNameByte(name[i]) {
			return fmt.Errorf("tool name %q: character %q is not allowed (use A-Z a-z 0-9 _ - and dots)", name, name[i])
		}
		seg++
	}
	return nil
}

// Annotations are MCP's tool hints, with MCP's defaults when unset:
// not read-only, destructive, not idempotent, open-world. Pointers keep
// "unset" distinct from "false" so the defaults survive a round trip.
type Annotations struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// IsReadOnly reports the read_only hint (default false).
func (a *Annotations) IsReadOnly() bool { return a != nil && boolOr(a.ReadOnly, false) }

// IsDestructive reports the destructive hint (default true; meaningless when read-only).
func (a *Annotations) IsDestructive() bool {
	if a == nil {
		return true
	}
	return boolOr(a.Destructive, true)
}

// IsIdempotent reports the idempotent hint (default false). Callers retry
// transient failures of idempotent tools on their own.
func (a *Annotations) IsIdempotent() bool { return a != nil && boolOr(a.Idempotent, false) }

// IsOpenWorld reports the open_world hint (default true).
func (a *Annotations) IsOpenWorld() bool {
	if a == nil {
		return true
	}
	return boolOr(a.OpenWorld, true)
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string ("1m30s") or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		if v < 0 {
			return errors.New("duration must not be negative")
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return errors.New(`want a duration such as "30s" or a number of seconds`)
	}
	if secs < 0 {
		return errors.New("duration must not be negative")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// ToolSpec describes one tool: what callers see in the catalogue and what a
// worker checks calls against.
type ToolSpec struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
	// InputSchema is an object schema for the call's args; when absent any
	// object is accepted.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema, when present, is enforced on every result.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// MCPResult says every result is an MCP tool result: an object with
	// "content" (an array of MCP content blocks — text, image, audio,
	// resource, resource_link — which a host passes to a model as they
	// are), "structuredContent" (an object) when the tool has one, and
	// optionally "_meta". OutputSchema then describes structuredContent.
	// The MCP bridge sets it on every tool it hosts, and the MCP gateway
	// serves such a result unchanged.
	MCPResult bool `json:"mcp_result,omitempty"`
	// MCP is, for a tool an MCP server offers through the MCP bridge, the
	// server's own definition of it and its place in the server's list, so
	// an MCP gateway lists the tool exactly as the server does. A worker
	// leaves such a tool's args to the server to judge (the server answers
	// a refusal in its own words). Absent for every other tool.
	MCP *MCPTool `json:"mcp,omitempty"`
	// Streaming says the tool emits deltas worth watching.
	Streaming bool     `json:"streaming,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	// Timeout bounds one run of the tool (the call's own budget bounds it further).
	Timeout Duration `json:"timeout,omitempty"`
	// Sandbox summarises how the worker confines the tool's program
	// (absent: the worker says nothing, e.g. a Go handler or an
	// unconfined program). It counts grants and never names paths.
	Sandbox *SandboxSummary `json:"sandbox,omitempty"`
}

// MCPTool is an MCP server's view of one of its tools hosted on the mesh.
type MCPTool struct {
	// Definition is the tool as the server's tools/list gave it (a JSON
	// object, the server's name in it): what the mesh's own fields cannot
	// say exactly — execution, a hint left unset, icons, _meta — kept.
	// Absent when the bridge could not see the server's own bytes.
	Definition json.RawMessage `json:"definition,omitempty"`
	// Position is the tool's place in the server's tools/list, 0 first:
	// servers list their tools in an order of their choosing.
	Position int `json:"position"`
}

// SandboxSummary is what callers see of a tool's sandbox.
type SandboxSummary struct {
	// Confined is true when the program runs in a kernel-enforced sandbox.
	Confined bool `json:"confined"`
	// ReadPaths and WritePaths count the granted paths (the program's own
	// executable and libraries are granted besides).
	ReadPaths  int `json:"read_paths"`
	WritePaths int `json:"write_paths"`
	// Network is "none", "any" or "tcp ports 443,8080".
	Network string `json:"network"`
	// Limits are the resource limits; zero members are unlimited.
	Limits SandboxLimits `json:"limits"`
}

// SandboxLimits are a sandbox's resource limits as a spec shows them.
type SandboxLimits struct {
	CPUSeconds int `json:"cpu_seconds,omitempty"`
	MemoryMB   int `json:"memory_mb,omitempty"`
	Files      int `json:"files,omitempty"`
	Processes  int `json:"processes,omitempty"`
}

// Validate checks the name and both schemas (the input schema must be an
// object schema), returning an error that names the tool and the field.
func (s ToolSpec) Validate() error {
	_, _, err := s.Compile()
	return err
}

// Compile validates the spec and compiles its schemas (nil when absent).
func (s ToolSpec) Compile() (input, output *Schema, err error) {
	if err := s.checkShape(); err != nil {
		return nil, nil, err
	}
	if len(s.InputSchema) > 0 {
		if input, err = CompileSchema(s.InputSchema); err != nil {
			return nil, nil, fmt.Errorf("tool %q: field input_schema: %w", s.Name, err)
		}
	}
	if len(s.OutputSchema) > 0 {
		if output, err = CompileSchema(s.OutputSchema); err != nil {
			return nil, nil, fmt.Errorf("tool %q: field output_schema: %w", s.Name, err)
		}
	}
	return input, output, nil
}

// checkShape checks what Compile checks short of compiling the schemas:
// the name, an input schema that is a JSON object with "type":"object",
// an output schema that is a JSON object or boolean, and the mcp member. It
// costs microseconds where compiling a schema costs tens of them, so a
// reader of many specs it does not run (a caller's catalogue) checks
// this and leaves the schemas to Compile, when their compiled form is
// wanted.
func (s ToolSpec) checkShape() error {
	if err := ValidateToolName(s.Name); err != nil {
		return fmt.Errorf("tool %q: field name: %w", s.Name, err)
	}
	if len(s.InputSchema) > 0 {
		var head struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(s.InputSchema, &head); err != nil || !wire.IsObject(s.InputSchema) {
			return fmt.Errorf("tool %q: field input_schema: want a JSON Schema object", s.Name)
		}
		if head.Type != "object" {
			return fmt.Errorf(`tool %q: field input_schema: must be an object schema ("type":"object"), got type %v`, s.Name, head.Type)
		}
	}
	if len(s.OutputSchema) > 0 && !wire.IsObject(s.OutputSchema) && !isJSONBool(s.OutputSchema) {
		return fmt.Errorf("tool %q: field output_schema: want a JSON Schema (an object or a boolean)", s.Name)
	}
	if s.MCP != nil && ((len(s.MCP.Definition) > 0 && !wire.IsObject(s.MCP.Definition)) || s.MCP.Position < 0) {
		return fmt.Errorf("tool %q: field mcp: want a definition that is a JSON object (or none) and a position of 0 or more", s.Name)
	}
	return nil
}

// isJSONBool reports whether raw is the JSON literal true or false.
func isJSONBool(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return string(t) == "true" || string(t) == "false"
}

// ParseToolSpecs reads a JSON array of specs, each checked for its shape
// (what Compile checks short of compiling the schemas) but none compiled
// (UnmarshalJSON compiles every schema it reads). A spec's schemas
// compile when Compile is called.
func ParseToolSpecs(data []byte) ([]ToolSpec, error) {
	type plain ToolSpec
	var ps []plain
	if err := json.Unmarshal(data, &ps); err != nil {
		return nil, fmt.Errorf("tool specs: %w", err)
	}
	out := make([]ToolSpec, len(ps))
	for i, p := range ps {
		out[i] = ToolSpec(p)
		if err := out[i].checkShape(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UnmarshalJSON reads a spec and validates it.
func (s *ToolSpec) UnmarshalJSON(b []byte) error {
	type plain ToolSpec
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("tool spec: %w", err)
	}
	if err := ToolSpec(p).Validate(); err != nil {
		return err
	}
	*s = ToolSpec(p)
	return nil
}
