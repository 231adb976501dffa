package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema (2020-12 by default; draft-07 and the
// other drafts when the document's $schema names them). Compile once,
// validate many times; a Schema is safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	printer  *message.Printer
	fast     *fastSchema // nil unless the schema is in the flat-object subset
}

// Violation is one way a document fails its schema: where (a JSON pointer
// into the document) and what.
type Violation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// refuseLoader refuses every URL, so a schema's $ref can reach only the
// schema itself and the embedded meta-schemas: nothing is ever read from
// the network or the file system.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %q: remote and file $ref are not allowed", url)
}

// CompileSchema compiles a JSON Schema document.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	const loc = "urn:toolmesh:schema"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	return &Schema{compiled: s, printer: message.NewPrinter(language.English), fast: compileFast(doc)}, nil
}

// Validate checks doc against the schema and returns every violation
// (none when doc conforms). Invalid JSON is one violation at the root.
// A schema in the flat-object subset (see schemafast.go) first scans doc
// without allocating; only a document it cannot vouch for is decoded.
func (s *Schema) Validate(doc json.RawMessage) []Violation {
	if s.fast != nil && s.fast.valid(doc) {
		return nil
	}
	if !boundedNumbers(doc) {
		return []Violation{{Pointer: "", Message: fmt.Sprintf(
			"a number has more than %d digits or an exponent beyond ±%d; such numbers are not validated (pass them as strings)",
			maxNumberDigits, maxNumberExponent)}}
	}
	return s.validateLibrary(doc)
}

// validateLibrary is Validate by the library alone: the source of every
// violation.
func (s *Schema) validateLibrary(doc json.RawMessage) []Violation {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []Violation{{Pointer: "", Message: "not valid JSON: " + err.Error()}}
	}
	return s.validateValue(v)
}

// validateValue checks an already decoded value (as decoded by
// jsonschema.UnmarshalJSON or encoding/json with UseNumber).
func (s *Schema) validateValue(v any) []Violation {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	s.collectLeaves(ve, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

func (s *Schema) collectLeaves(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) == 0 {
		// Point at the offending member itself, one violation each, so an
		// agent can fix them independently.
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				*out = append(*out, Violation{Pointer: pointer(append(slices.Clone(e.InstanceLocation), name)), Message: "required property is missing"})
			}
			return
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				*out = append(*out, Violation{Pointer: pointer(append(slices.Clone(e.InstanceLocation), name)), Message: "property is not allowed (additionalProperties: false)"})
			}
			return
		}
		*out = append(*out, Violation{Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(s.printer)})
		return
	}
	for _, c := range e.Causes {
		s.collectLeaves(c, out)
	}
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// violationsFix is the suggested fix of an invalid_input Problem that
// lists schema violations; one without violations keeps the registry's.
const violationsFix = "Correct the arguments so they satisfy the tool's input schema (see violations), then retry."

// ValidationProblem turns violations into one invalid_input Problem that
// lists every violation (extension "violations") with a code action per
// violation, so an agent can fix all of its input in one go. what names
// the validated thing ("args", "result").
func ValidationProblem(code Code, what string, violations []Violation) *Problem {
	msgs := make([]string, 0, len(violations))
	actions := make([]CodeAction, 0, len(violations))
	for _, v := range violations {
		at := v.Pointer
		if at == "" {
			at = "/"
		}
		msgs = append(msgs, at+": "+v.Message)
		actions = append(actions, CodeAction{
			Title:         fmt.Sprintf("Fix %s at %s: %s", what, at, v.Message),
			Kind:          "quickfix",
			Applicability: HasPlaceholders,
			Edit:          map[string]any{"pointer": v.Pointer},
		})
	}
	verb := "does" // the result, the answer
	if what == "args" {
		verb = "do"
	}
	p := Problemf(code, "%s %s not match the schema: %s", what, verb, strings.Join(msgs, "; "))
	if code == CodeInvalidInput {
		p.WithFix(violationsFix, MaybeIncorrect)
	}
	p.CodeActions = actions
	return p.WithExtension("violations", violations)
}

// maxFormatSchemaBytes bounds a caller-supplied response_format schema:
// a caller's schema is compiled and held by the worker, so its size is
// bounded like any other input a neighbour can send.
const maxFormatSchemaBytes = 64 << 10

// CompileFormatSchema compiles a caller's response_format schema and
// refuses one that no result could satisfy — the schema false, one whose
// $ref chain loops without consuming the document (such as {"$ref":"#"}),
// or one whose keywords contradict each other (unsatisfiable lists what is
// decided) — so that the call is refused before its tool runs rather than
// after its side effects.
func CompileFormatSchema(raw json.RawMessage) (*Schema, error) {
	if len(raw) > maxFormatSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes, more than the %d a worker compiles", len(raw), maxFormatSchemaBytes)
	}
	s, err := CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	if s.compiled.Bool != nil && !*s.compiled.Bool {
		return nil, fmt.Errorf("schema is false: no result can satisfy it")
	}
	if why := unsatisfiable(raw); why != "" {
		return nil, fmt.Errorf("no result can satisfy the schema: %s", why)
	}
	for _, probe := range []any{nil, map[string]any{}, []any{}, "", json.Number("0"), true} {
		var ve *jsonschema.ValidationError
		if err := s.compiled.Validate(probe); err != nil && errors.As(err, &ve) {
			if k := refCycle(ve); k != nil {
				return nil, fmt.Errorf("schema's $ref chain loops (%s): no result can satisfy it", k.LocalizedString(s.printer))
			}
		}
	}
	return s, nil
}

// refCycle finds the reference cycle a validation failed on, if any.
func refCycle(e *jsonschema.ValidationError) *kind.RefCycle {
	if k, ok := e.ErrorKind.(*kind.RefCycle); ok {
		return k
	}
	for _, c := range e.Causes {
		if k := refCycle(c); k != nil {
			return k
		}
	}
	return nil
}
