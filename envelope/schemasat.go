package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// unsatisfiable reports why no JSON value can satisfy the schema doc, or
// "" when it cannot tell. It is sound but incomplete: it names only
// contradictions it can decide from the schema's own keywords, so a
// caller's response_format that could never be met is refused before the
// tool runs, not after its side effects.
//
// Decided: the schema false and not:{} (or not:true); enum:[]; type:[];
// const or enum values outside the type, or outside each other; minimum
// above maximum (exclusive bounds included), minLength above maxLength and
// likewise for items and properties; allOf with a branch that cannot be
// met or whose types have nothing in common; anyOf and oneOf whose every
// branch cannot be met; a required property whose schema cannot be met
// or that additionalProperties:false with no matching properties entry
// forbids; and all of these through local $ref ("#", "#/…") pointers.
// Not decided (such schemas run, and a result that fails them ends
// output_invalid): pattern and format, numbers that multipleOf and the
// bounds leave no room for, not of anything but the empty schema,
// if/then/else, dependent schemas, contains, uniqueItems, oneOf's
// exclusivity, and $ref to other documents.
func unsatisfiable(doc []byte) string {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return ""
	}
	w := satWalker{root: root, seen: map[string]bool{}}
	return w.why(root, "")
}

// satWalker walks one schema document, following local references once
// each so a reference cycle ends the walk instead of looping.
type satWalker struct {
	root any
	seen map[string]bool
}

// why reports why schema s (at pointer at) cannot be satisfied, or "".
func (w *satWalker) why(s any, at string) string {
	switch v := s.(type) {
	case bool:
		if !v {
			return at + "false allows no value"
		}
		return ""
	case map[string]any:
		for _, check := range []func(map[string]any, string) string{
			w.viaRef, w.negation, w.values, w.bounds, w.combinators, w.required,
		} {
			if r := check(v, at); r != "" {
				return r
			}
		}
	}
	return ""
}

// viaRef follows a local $ref that this walk has not yet followed.
func (w *satWalker) viaRef(s map[string]any, at string) string {
	ref, ok := s["$ref"].(string)
	if !ok || !strings.HasPrefix(ref, "#") || w.seen[ref] {
		return ""
	}
	target, ok := resolvePointer(w.root, strings.TrimPrefix(ref, "#"))
	if !ok {
		return ""
	}
	w.seen[ref] = true
	defer delete(w.seen, ref)
	return w.why(target, at)
}

// negation: not of the empty schema (or of true) forbids every value.
func (w *satWalker) negation(s map[string]any, at string) string {
	switch n := s["not"].(type) {
	case bool:
		if n {
			return at + "not:true forbids every value"
		}
	case map[string]any:
		if len(n) == 0 {
			return at + "not:{} forbids every value"
		}
	}
	return ""
}

// jsonTypes is every JSON Schema type name.
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// allowedTypes is the set of types s allows (all when it has no type).
func allowedTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := []string{}
		for _, e := range t {
			if name, ok := e.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	return jsonTypes
}

// typeOf is the JSON Schema type of a decoded value.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if f, ok := new(big.Float).SetString(x.String()); ok && f.IsInt() {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// typeAllows reports whether a value of type t meets the allowed types.
func typeAllows(allowed []string, t string) bool {
	return slices.Contains(allowed, t) || t == "integer" && slices.Contains(allowed, "number")
}

// values: the type list, enum and const must leave some value.
func (w *satWalker) values(s map[string]any, at string) string {
	types := allowedTypes(s)
	if len(types) == 0 {
		return at + "type:[] allows no type"
	}
	enum, hasEnum := s["enum"].([]any)
	if hasEnum && len(enum) == 0 {
		return at + "enum:[] allows no value"
	}
	c, hasConst := s["const"]
	if hasConst && !typeAllows(types, typeOf(c)) {
		return fmt.Sprintf("%sconst is a %s, which type does not allow", at, typeOf(c))
	}
	if hasConst && hasEnum && !slices.ContainsFunc(enum, func(e any) bool { return jsonEqual(e, c) }) {
		return at + "const is not among enum's values"
	}
	if hasEnum && !slices.ContainsFunc(enum, func(e any) bool { return typeAllows(types, typeOf(e)) }) {
		return at + "no value of enum has a type that type allows"
	}
	return ""
}

// jsonEqual compares two decoded JSON values (numbers by value).
func jsonEqual(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		p, okP := new(big.Float).SetString(x.String())
		q, okQ := new(big.Float).SetString(y.String())
		return okP && okQ && p.Cmp(q) == 0
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// bounds: each lower bound must not pass its upper bound. A bound only
// constrains values of its own type, so a schema allowing other types
// stays satisfiable.
func (w *satWalker) bounds(s map[string]any, at string) string {
	pairs := []struct{ typ, lo, hi string }{
		{"string", "minLength", "maxLength"},
		{"array", "minItems", "maxItems"},
		{"object", "minProperties", "maxProperties"},
	}
	types := allowedTypes(s)
	for _, p := range pairs {
		if len(types) == 1 && types[0] == p.typ && numAbove(s[p.lo], s[p.hi], false) {
			return fmt.Sprintf("%s%s is above %s", at, p.lo, p.hi)
		}
	}
	if !onlyNumeric(types) {
		return ""
	}
	for _, lo := range []string{"minimum", "exclusiveMinimum"} {
		for _, hi := range []string{"maximum", "exclusiveMaximum"} {
			if numAbove(s[lo], s[hi], lo != "minimum" || hi != "maximum") {
				return fmt.Sprintf("%s%s is above %s", at, lo, hi)
			}
		}
	}
	return ""
}

// onlyNumeric reports whether the allowed types are numbers alone.
func onlyNumeric(types []string) bool {
	for _, t := range types {
		if t != "number" && t != "integer" {
			return false
		}
	}
	return true
}

// numAbove reports lo > hi (lo >= hi when strict), both JSON numbers.
func numAbove(lo, hi any, strict bool) bool {
	a, okA := lo.(json.Number)
	b, okB := hi.(json.Number)
	if !okA || !okB {
		return false
	}
	x, okX := new(big.Float).SetString(a.String())
	y, okY := new(big.Float).SetString(b.String())
	if !okX || !okY {
		return false
	}
	c := x.Cmp(y)
	return c > 0 || strict && c == 0
}

// combinators: allOf needs every branch (and a common type), anyOf and
// oneOf at least one branch that can be met.
func (w *satWalker) combinators(s map[string]any, at string) string {
	if all, ok := s["allOf"].([]any); ok {
		types := allowedTypes(s)
		for i, b := range all {
			if r := w.why(b, fmt.Sprintf("%sallOf/%d: ", at, i)); r != "" {
				return r
			}
			if m, ok := b.(map[string]any); ok {
				types = intersect(types, allowedTypes(m))
			}
		}
		if len(types) == 0 {
			return at + "allOf's branches have no type in common"
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, ok := s[k].([]any)
		if !ok {
			continue
		}
		if len(branches) == 0 {
			return fmt.Sprintf("%s%s:[] allows no value", at, k)
		}
		var last string
		for i, b := range branches {
			if last = w.why(b, fmt.Sprintf("%s%s/%d: ", at, k, i)); last == "" {
				break
			}
		}
		if last != "" {
			return fmt.Sprintf("%sno branch of %s can be met (%s)", at, k, last)
		}
	}
	return ""
}

// intersect keeps the types of a that b allows too (integer within number).
func intersect(a, b []string) []string {
	var out []string
	for _, t := range a {
		switch {
		case typeAllows(b, t):
			out = append(out, t)
		case t == "number" && slices.Contains(b, "integer"):
			out = append(out, "integer")
		}
	}
	return out
}

// required: a required property must be allowed and satisfiable.
func (w *satWalker) required(s map[string]any, at string) string {
	req, _ := s["required"].([]any)
	if len(req) == 0 || !slices.Equal(allowedTypes(s), []string{"object"}) {
		return ""
	}
	props, _ := s["properties"].(map[string]any)
	closed := s["additionalProperties"] == false && s["patternProperties"] == nil
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		p, has := props[name]
		if !has {
			if closed {
				return fmt.Sprintf("%srequired property %q is not allowed by additionalProperties:false", at, name)
			}
			continue
		}
		if why := w.why(p, fmt.Sprintf("%sproperties/%s: ", at, name)); why != "" {
			return why
		}
	}
	return ""
}

// resolvePointer resolves a JSON Pointer ("" or "/a/b") within doc.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}
