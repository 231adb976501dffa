package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// OpenAI strict mode (Structured Outputs) accepts a subset of JSON Schema:
// the keywords below, every object closed, every property required, a
// root object, at most 10 levels of nesting and 5000 properties.
const (
	strictMaxDepth = 10
	strictMaxProps = 5000
	// strictMaxEnums and strictMaxChars are the limits on enum values and
	// on the total length of property names, definition names and enum
	// strings.
	strictMaxEnums = 1000
	strictMaxChars = 15000
	// maxInlineNodes bounds the work of inlining $refs: a hostile schema
	// whose references fan out would otherwise grow exponentially.
	maxInlineNodes = 20000
)

// strictKeeps reports the keywords strict mode accepts and the export keeps.
func strictKeeps(k string) bool {
	switch k {
	case "type", "description", "enum", "pattern", "format", "multipleOf", "maximum",
		"exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems":
		return true
	}
	return false
}

// strictDrops reports keywords that only narrow or annotate: dropping them
// keeps every valid value valid, and the worker still enforces them on
// the arguments the model sends, answering invalid_input when they fail.
func strictDrops(k string) bool {
	switch k {
	case "title", "default", "examples", "$schema", "$id", "$comment", "$anchor",
		"minLength", "maxLength", "uniqueItems", "contains", "minContains", "maxContains",
		"minProperties", "maxProperties", "propertyNames", "not", "if", "then", "else",
		"dependentRequired", "dependentSchemas", "readOnly", "writeOnly", "deprecated",
		"contentEncoding", "contentMediaType", "contentSchema", "unevaluatedItems":
		return true
	}
	return false
}

// strictFormat reports the string formats strict mode accepts.
func strictFormat(k string) bool {
	switch k {
	case "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6",
		"uuid":
		return true
	}
	return false
}

// strictResult is a schema prepared for OpenAI strict mode.
type strictResult struct {
	// Schema is the strict schema when Strict, else the input unchanged.
	Schema json.RawMessage
	// Strict is true only when Schema obeys every strict rule.
	Strict bool
	// Reason says why the schema could not be made strict.
	Reason string
	// Notes list what the transformation dropped or rewrote, by pointer.
	Notes []string
}

// errNotStrict marks a schema that strict mode cannot express.
var errNotStrict = errors.New("not strict")

type strictifier struct {
	root   obj
	notes  []string
	props  int
	nodes  int
	inline []string // $refs being inlined, for cycle detection
}

// makeStrict transforms a JSON Schema for OpenAI strict mode. A schema that
// cannot be made strict comes back unchanged with Strict false and the
// reason; the result is never marked strict unless checkStrict passes.
func makeStrict(schema json.RawMessage) strictResult {
	v, err := decodeJSON(schema)
	if err != nil {
		return strictResult{Schema: schema, Reason: "schema is not valid JSON: " + err.Error()}
	}
	root, ok := v.(obj)
	if !ok || !hasType(root, "object") || len(typeList(root)) != 1 {
		return strictResult{Schema: schema, Reason: `the root must be {"type":"object"}`}
	}
	s := &strictifier{root: root}
	if takesNoArgs(root) {
		// An open root without properties declares no arguments: closed,
		// it says the same to a model and is strict-legal.
		root["additionalProperties"] = false
		s.note("", "no properties: exported as a closed empty object (the tool takes no arguments)")
	}
	out, err := s.transformRoot()
	if err != nil {
		return strictResult{Schema: schema, Reason: err.Error(), Notes: s.notes}
	}
	if v := checkStrict(out); len(v) > 0 {
		return strictResult{Schema: schema, Reason: "strict check failed: " + v[0], Notes: s.notes}
	}
	return strictResult{Schema: out, Strict: true, Notes: s.notes}
}

// takesNoArgs reports a root object that declares no argument at all:
// no properties (or none listed) and nothing else that admits members —
// additionalProperties, patternProperties, a composition or a $ref.
func takesNoArgs(root obj) bool {
	if props, ok := root["properties"]; ok {
		if p, isObj := props.(obj); !isObj || len(p) > 0 {
			return false
		}
	}
	for _, k := range []string{"additionalProperties", "patternProperties", "unevaluatedProperties", "anyOf", "oneOf", "allOf", "$ref", "$dynamicRef", "if", "not", "dependentSchemas"} {
		if _, ok := root[k]; ok {
			return false
		}
	}
	return true
}

func (s *strictifier) notStrict(ptr, format string, args ...any) error {
	return fmt.Errorf("%w: at %s: %s", errNotStrict, orRoot(ptr), fmt.Sprintf(format, args...))
}

func (s *strictifier) note(ptr, format string, args ...any) {
	s.notes = append(s.notes, orRoot(ptr)+": "+fmt.Sprintf(format, args...))
}

func orRoot(ptr string) string {
	if ptr == "" || ptr == "#" {
		return "/"
	}
	return ptr
}

// transformRoot transforms the root and its definitions.
func (s *strictifier) transformRoot() (json.RawMessage, error) {
	out, err := s.node(s.root, "", 1)
	if err != nil {
		return nil, err
	}
	o := out.(obj)
	for _, defsKey := range []string{"$defs", "definitions"} {
		defs, ok := s.root[defsKey].(obj)
		if !ok {
			continue
		}
		tdefs := obj{}
		for _, name := range sortedKeys(defs) {
			d, err := s.node(defs[name], ptrJoin("/"+defsKey, name), 1)
			if err != nil {
				return nil, err
			}
			tdefs[name] = d
		}
		o[defsKey] = tdefs
	}
	if s.props > strictMaxProps {
		return nil, s.notStrict("", "%d properties in all, more than strict mode's %d", s.props, strictMaxProps)
	}
	return mustJSON(o), nil
}

// node transforms one subschema at ptr, depth levels of objects deep.
func (s *strictifier) node(v any, ptr string, depth int) (any, error) {
	if s.nodes++; s.nodes > maxInlineNodes {
		return nil, s.notStrict(ptr, "more than %d subschemas once $refs are inlined", maxInlineNodes)
	}
	o, ok := v.(obj)
	if !ok {
		return nil, s.notStrict(ptr, "a boolean schema (true/false) has no strict form")
	}
	if ref, ok := o["$ref"].(string); ok {
		return s.ref(o, ref, ptr, depth)
	}
	out := obj{}
	for _, k := range sortedKeys(o) {
		if err := s.keyword(out, o, k, ptr, depth); err != nil {
			return nil, err
		}
	}
	if _, isObj := out["properties"]; isObj || hasType(out, "object") {
		if err := s.closeObject(out, o, ptr, depth); err != nil {
			return nil, err
		}
	}
	if out["type"] == nil && out["enum"] == nil && out["anyOf"] == nil {
		return nil, s.notStrict(ptr, "the schema allows any value (no type, enum or anyOf)")
	}
	return out, nil
}

// ref keeps a bare $ref to a definition or the root, and inlines the rest:
// a $ref with siblings, or one pointing elsewhere.
func (s *strictifier) ref(o obj, ref, ptr string, depth int) (any, error) {
	bare := len(o) == 1
	if bare && (ref == "#" || isDefRef(ref)) {
		return obj{"$ref": ref}, nil
	}
	if slices.Contains(s.inline, ref) {
		return nil, s.notStrict(ptr, "$ref with sibling keywords on a recursive definition (%s) cannot be inlined", refChain(s.inline, ref))
	}
	target, err := resolveRef(s.root, ref)
	if err != nil {
		return nil, s.notStrict(ptr, "%v", err)
	}
	t, ok := target.(obj)
	if !ok {
		return nil, s.notStrict(ptr, "$ref %q is a boolean schema", ref)
	}
	if !bare {
		s.note(ptr, "$ref %s with sibling keywords inlined", ref)
	}
	s.inline = append(s.inline, ref)
	defer func() { s.inline = s.inline[:len(s.inline)-1] }()
	merged := mergeRef(t, o)
	if ref == "#" {
		delete(merged, "$defs")
		delete(merged, "definitions")
	}
	return s.node(merged, ptr, depth)
}

func isDefRef(ref string) bool {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if len(ref) > len(p) && ref[:len(p)] == p && !containsSlash(ref[len(p):]) {
			return true
		}
	}
	return false
}

func containsSlash(s string) bool { return slices.Contains([]byte(s), '/') }
