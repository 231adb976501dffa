package provider

import (
	"encoding/json"
	"fmt"
	"slices"
)

// legacyResult is a JSON Schema lowered to Gemini's OpenAPI-subset Schema
// (FunctionDeclaration.parameters, GenerationConfig.responseSchema).
type legacyResult struct {
	Schema json.RawMessage
	// Notes list what was dropped or rewritten, by pointer.
	Notes []string
}

// legacyKeeps reports the keywords Gemini's Schema has, kept as they are.
func legacyKeeps(k string) bool {
	switch k {
	case "description", "title", "format", "minimum", "maximum", "minItems", "maxItems",
		"minLength", "maxLength", "pattern", "default", "minProperties", "maxProperties",
		"nullable", "propertyOrdering", "example":
		return true
	}
	return false
}

type legacyLowerer struct {
	root  any
	notes []string
	nodes int
	stack []string // $refs being inlined
}

// toLegacy lowers schema to Gemini's legacy Schema: $ref inlined (a cycle
// is an error naming it, since the subset has no references), type names
// upper-cased, ["T","null"] as nullable, oneOf as anyOf, allOf of objects
// merged; additionalProperties, $defs and other keywords the subset lacks
// are dropped and noted (the worker still enforces them).
func toLegacy(schema json.RawMessage) (legacyResult, error) {
	v, err := decodeJSON(schema)
	if err != nil {
		return legacyResult{}, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	l := &legacyLowerer{root: v}
	out, err := l.node(v, "")
	if err != nil {
		return legacyResult{Notes: l.notes}, err
	}
	return legacyResult{Schema: mustJSON(out), Notes: l.notes}, nil
}

func (l *legacyLowerer) note(ptr, format string, args ...any) {
	l.notes = append(l.notes, orRoot(ptr)+": "+fmt.Sprintf(format, args...))
}

func (l *legacyLowerer) node(v any, ptr string) (obj, error) {
	if l.nodes++; l.nodes > maxInlineNodes {
		return nil, fmt.Errorf("at %s: more than %d subschemas once $refs are inlined", orRoot(ptr), maxInlineNodes)
	}
	o, ok := v.(obj)
	if !ok {
		if v == true {
			l.note(ptr, "boolean schema true lowered to an unconstrained schema")
			return obj{}, nil
		}
		return nil, fmt.Errorf("at %s: a boolean schema false has no legacy form", orRoot(ptr))
	}
	if ref, ok := o["$ref"].(string); ok {
		return l.ref(o, ref, ptr)
	}
	if all, ok := o["allOf"].([]any); ok {
		return l.allOf(o, all, ptr)
	}
	out := obj{}
	for _, k := range sortedKeys(o) {
		if err := l.keyword(out, o, k, ptr); err != nil {
			return nil, err
		}
	}
	l.warnIncomplete(out, ptr)
	return out, nil
}

// warnIncomplete notes the shapes Gemini's endpoint is known to refuse in
// the legacy subset: an ARRAY without items, an OBJECT without properties.
func (l *legacyLowerer) warnIncomplete(out obj, ptr string) {
	switch {
	case out["type"] == "ARRAY" && out["items"] == nil:
		l.note(ptr, "an array without items: Gemini may refuse it")
	case out["type"] == "OBJECT" && len(asObj(out["properties"])) == 0:
		l.note(ptr, "an object without properties (an open map): Gemini may refuse it")
	}
}

func asObj(v any) obj {
	o, _ := v.(obj)
	return o
}

func (l *legacyLowerer) ref(o obj, ref, ptr string) (obj, error) {
	if slices.Contains(l.stack, ref) {
		return nil, fmt.Errorf("at %s: $ref cycle %s: the legacy schema has no references, so a recursive schema cannot be inlined", orRoot(ptr), refChain(l.stack, ref))
	}
	target, err := resolveRef(l.root, ref)
	if err != nil {
		return nil, fmt.Errorf("at %s: %w", orRoot(ptr), err)
	}
	t, ok := target.(obj)
	if !ok {
		return l.node(target, ptr)
	}
	l.stack = append(l.stack, ref)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	merged := mergeRef(t, o)
	delete(merged, "$defs")
	delete(merged, "definitions")
	return l.node(merged, ptr)
}

// allOf merges object members (properties and required united), the one
// use of allOf the subset can express.
func (l *legacyLowerer) allOf(o obj, all []any, ptr string) (obj, error) {
	merged := copyObj(o)
	delete(merged, "allOf")
	props := obj{}
	if p, ok := o["properties"].(obj); ok {
		props = copyObj(p)
	}
	req := requiredSet(o)
	for i, m := range all {
		lm, err := l.node(m, ptrJoin(ptrJoin(ptr, "allOf"), fmt.Sprint(i)))
		if err != nil {
			return nil, err
		}
		if lm["type"] != nil && lm["type"] != "OBJECT" {
			return nil, fmt.Errorf("at %s: allOf of non-object schemas has no legacy form", orRoot(ptr))
		}
		p, _ := lm["properties"].(obj)
		for k, v := range p {
			props[k] = v
		}
		rs, _ := lm["required"].([]any)
		for _, r := range rs {
			if name, ok := r.(string); ok {
				req[name] = true
			}
		}
	}
	merged["type"], merged["properties"] = "object", props
	merged["required"] = sortedReq(req)
	l.note(ptr, "allOf merged into one object")
	return l.node(merged, ptr)
}

func sortedReq(req map[string]bool) []any {
	out := make([]any, 0, len(req))
	for _, k := range sortedKeys(boolsToObj(req)) {
		out = append(out, k)
	}
	return out
}

func boolsToObj(m map[string]bool) obj {
	o := make(obj, len(m))
	for k := range m {
		o[k] = true
	}
	return o
}
