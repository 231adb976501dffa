package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolmesh/toolmesh/envelope"
)

// ToolHandler is a typed tool's function: it gets the call's arguments
// decoded into In (schema defaults applied) and returns Out, which the
// worker checks against the output schema inferred from Out.
type ToolHandler[In, Out any] func(ctx context.Context, req *Request, in In) (Out, error)

// StreamToolHandler is a streaming typed tool's function: like
// ToolHandler, with an emitter whose deltas are D.
type StreamToolHandler[In, D, Out any] func(ctx context.Context, req *Request, in In, emit TypedEmitter[D]) (Out, error)

// TypedEmitter sends a streaming typed tool's non-terminal events; it is
// Emitter with deltas of one Go type, so a handler cannot send a delta of
// the wrong shape by accident.
type TypedEmitter[D any] struct{ e Emitter }

// NewTypedEmitter makes e the emitter of a streaming typed handler: to
// call a StreamToolHandler directly, as a test does with a
// workertest.Recorder.
func NewTypedEmitter[D any](e Emitter) TypedEmitter[D] { return TypedEmitter[D]{e} }

// Progress reports coarse progress, pct in 0..100 (see Emitter.Progress).
func (t TypedEmitter[D]) Progress(pct float64, message string) error {
	return t.e.Progress(pct, message)
}

// Delta sends one piece of partial output (see Emitter.Delta).
func (t TypedEmitter[D]) Delta(d D) error { return t.e.Delta(d) }

// AddTool registers a typed tool on w, the way mcp.AddTool does for MCP
// servers: when spec has no input or output schema, it is inferred from
// In and Out (package github.com/google/jsonschema-go: a `jsonschema` tag
// is a property's description, and a `toolmesh` tag adds default=, enum=
// (values split by |), minimum= and maximum=). The worker validates the
// arguments against the input schema before the handler runs, so bad input
// never reaches h; the schema's defaults are applied before decoding into
// In, and a result that does not match the output schema ends the call with
// output_invalid. A non-object Out (a number, a list) reaches callers as
// {"result": …}, and caller.CallAs decodes it back. mw wraps this tool
// only, inside the worker-wide chain (Config.Middleware).
//
//	worker.AddTool(w, envelope.ToolSpec{Name: "add"},
//		func(ctx context.Context, _ *worker.Request, in Pair) (int, error) {
//			return in.A + in.B, nil
//		})
func AddTool[In, Out any](w *Worker, spec envelope.ToolSpec, h ToolHandler[In, Out], mw ...Middleware) error {
	return addTyped[In, Out](w, spec, func(ctx context.Context, req *Request, in In, _ Emitter) (Out, error) {
		return h(ctx, req, in)
	}, mw)
}

// AddStreamTool is AddTool for a tool that streams deltas of type D; it
// marks spec as streaming.
func AddStreamTool[In, D, Out any](w *Worker, spec envelope.ToolSpec, h StreamToolHandler[In, D, Out], mw ...Middleware) error {
	spec.Streaming = true
	return addTyped[In, Out](w, spec, func(ctx context.Context, req *Request, in In, emit Emitter) (Out, error) {
		return h(ctx, req, in, TypedEmitter[D]{emit})
	}, mw)
}

// addTyped infers the schemas, wraps f as a Handler and registers it.
func addTyped[In, Out any](w *Worker, spec envelope.ToolSpec, f func(context.Context, *Request, In, Emitter) (Out, error), mw []Middleware) error {
	spec, defaults, err := typedSpec[In, Out](spec)
	if err != nil {
		return w.problems.New(envelope.CodeInvalidConfig, fmt.Sprintf("tool %s: %v", spec.Name, err))
	}
	h := HandlerFunc(func(ctx context.Context, req *Request, emit Emitter) (any, error) {
		var in In
		if err := bindArgs(req.Tool, defaults.apply(req.Args), &in); err != nil {
			return nil, err
		}
		out, err := f(ctx, req, in, emit)
		if err != nil {
			return nil, err
		}
		return out, nil
	})
	return w.Register(spec, h, mw...)
}

// typedSpec fills spec's missing schemas from In and Out and returns the
// input schema's defaults.
func typedSpec[In, Out any](spec envelope.ToolSpec) (envelope.ToolSpec, inputDefaults, error) {
	if len(spec.InputSchema) == 0 {
		raw, err := InferSchema[In]()
		if err != nil {
			return spec, inputDefaults{}, fmt.Errorf("input schema: %w", err)
		}
		spec.InputSchema = raw
	}
	if len(spec.OutputSchema) == 0 && !untyped(reflect.TypeFor[Out]()) {
		raw, err := InferSchema[Out]()
		if err != nil {
			return spec, inputDefaults{}, fmt.Errorf("output schema: %w", err)
		}
		spec.OutputSchema = raw
	}
	d, err := resolveDefaults(spec.InputSchema)
	return spec, d, err
}

// untyped reports whether t says nothing about JSON's shape: an interface
// or raw JSON, which AddTool passes through without an output schema.
func untyped(t reflect.Type) bool {
	return t.Kind() == reflect.Interface || t == reflect.TypeFor[json.RawMessage]()
}

// InferSchema returns the JSON Schema of T as AddTool infers it: the
// schema github.com/google/jsonschema-go makes (descriptions from
// `jsonschema` tags; struct fields without omitempty are required; unknown
// members are refused), with the constraints of `toolmesh` tags added:
//
//	N int `json:"n" jsonschema:"how many" toolmesh:"default=5,minimum=0"`
//	Mode string `json:"mode" toolmesh:"enum=fast|slow"`
//
// A field with a default is optional. The default fills in a member the
// call leaves out, never one it sends: a Go caller that encodes the same
// struct sends a zero B as "b":0 unless the field has omitempty (or
// omitzero, or is a nil pointer), so give a defaulted field omitempty when
// callers share the type (ExampleAddTool_defaults). An untyped T (any) is
// an object.
func InferSchema[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if err := applyTags(reflect.TypeFor[T](), s); err != nil {
		return nil, err
	}
	if s.Type == "" && len(s.Types) == 0 && reflect.TypeFor[T]().Kind() == reflect.Interface {
		s.Type = "object"
	}
	return json.Marshal(s)
}

// applyTags walks t beside its inferred schema s, adding what the
// `toolmesh` tags of t's struct fields say, at any depth.
func applyTags(t reflect.Type, s *jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			return applyTags(t.Elem(), s.Items)
		}
	case reflect.Map:
		if s.AdditionalProperties != nil {
			return applyTags(t.Elem(), s.AdditionalProperties)
		}
	case reflect.Struct:
		return applyFieldTags(t, s)
	}
	return nil
}

// applyFieldTags applies the tags of each of struct t's fields to its
// property in s, then descends into the field's own type.
func applyFieldTags(t reflect.Type, s *jsonschema.Schema) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			if err := applyTags(f.Type, s); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if tag, ok := f.Tag.Lookup("toolmesh"); ok {
			if err := applyTag(tag, ps); err != nil {
				return fmt.Errorf("field %s.%s: %w", t, f.Name, err)
			}
			if ps.Default != nil {
				s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
			}
		}
		if err := applyTags(f.Type, ps); err != nil {
			return err
		}
	}
	return nil
}

// jsonName is the member name encoding/json gives field f ("" when the
// tag names none).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// applyTag applies one `toolmesh` tag (key=value pairs split by commas) to ps.
func applyTag(tag string, ps *jsonschema.Schema) error {
	for part := range strings.SplitSeq(tag, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("toolmesh tag %q: want key=value", part)
		}
		switch key {
		case "default":
			ps.Default = tagValue(ps, val)
		case "enum":
			for v := range strings.SplitSeq(val, "|") {
				var e any
				_ = json.Unmarshal(tagValue(ps, v), &e)
				ps.Enum = append(ps.Enum, e)
			}
		case "minimum", "maximum":
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("toolmesh tag %s=%q: want a number", key, val)
			}
			if key == "minimum" {
				ps.Minimum = &n
			} else {
				ps.Maximum = &n
			}
		default:
			return fmt.Errorf("toolmesh tag: unknown key %q (want default, enum, minimum or maximum)", key)
		}
	}
	return nil
}

// tagValue is a tag's value as JSON: a string for a string property,
// else the value itself when it is JSON, else the value as a string (so a
// mistyped default is caught when the schema is resolved).
func tagValue(ps *jsonschema.Schema, v string) json.RawMessage {
	if ps.Type != "string" && !slices.Contains(ps.Types, "string") && json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// inputDefaults applies an input schema's defaults to call arguments.
type inputDefaults struct{ resolved *jsonschema.Resolved }

// resolveDefaults resolves raw for its defaults (checking that each one
// fits its property); a schema with none applies nothing.
func resolveDefaults(raw json.RawMessage) (inputDefaults, error) {
	if !bytes.Contains(raw, []byte(`"default"`)) {
		return inputDefaults{}, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return inputDefaults{}, fmt.Errorf("input schema: %w", err)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return inputDefaults{}, fmt.Errorf("input schema: %w", err)
	}
	return inputDefaults{r}, nil
}

// apply returns args with every missing member that has a default filled
// in. Numbers keep their exact text; args that cannot take defaults (the
// worker has already checked them against the schema) stay as they are.
func (d inputDefaults) apply(args json.RawMessage) (out json.RawMessage) {
	if d.resolved == nil {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return args
	}
	// ApplyDefaults documents that it may panic on a value it cannot
	// assign; the args then go to decoding as they came.
	defer func() {
		if recover() != nil {
			out = args
		}
	}()
	if err := d.resolved.ApplyDefaults(&m); err != nil {
		return args
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}
