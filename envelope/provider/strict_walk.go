package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// keyword lowers one keyword k of o into out.
func (s *strictifier) keyword(out, o obj, k, ptr string, depth int) error {
	v := o[k]
	switch {
	case k == "properties" || k == "required" || k == "additionalProperties":
		return nil // closeObject rebuilds these
	case k == "$defs" || k == "definitions":
		if ptr != "" {
			return s.notStrict(ptr, "%s below the root", k)
		}
		return nil
	case k == "format":
		if f, _ := v.(string); strictFormat(f) {
			out[k] = v
		} else {
			s.note(ptr, "format %v dropped (strict mode does not support it)", v)
		}
	case strictKeeps(k):
		out[k] = v
	case k == "const":
		out["enum"] = []any{v}
		s.note(ptr, "const rewritten as a one-value enum")
	case k == "items":
		item, ok := v.(obj)
		if !ok {
			return s.notStrict(ptr, "items must be one schema (tuples are not supported)")
		}
		t, err := s.node(item, ptrJoin(ptr, "items"), depth+1)
		if err != nil {
			return err
		}
		out["items"] = t
	case k == "anyOf" || k == "oneOf":
		return s.union(out, o, k, ptr, depth)
	case k == "unevaluatedProperties" && v == false:
		s.note(ptr, "unevaluatedProperties:false dropped (the object is closed anyway)")
	case k == "allOf", k == "patternProperties", k == "prefixItems", k == "unevaluatedProperties", k == "dependencies":
		return s.notStrict(ptr, "%s cannot be expressed in strict mode", k)
	case strictDrops(k):
		s.note(ptr, "%s dropped (not in strict mode's subset)", k)
	default:
		s.note(ptr, "unknown keyword %q dropped", k)
	}
	return nil
}

// union lowers anyOf (and oneOf, which strict mode lacks, as anyOf: the
// worker still enforces "exactly one").
func (s *strictifier) union(out, o obj, k, ptr string, depth int) error {
	if _, both := o["anyOf"]; both && k == "oneOf" {
		return s.notStrict(ptr, "both anyOf and oneOf")
	}
	branches, ok := o[k].([]any)
	if !ok || len(branches) == 0 {
		return s.notStrict(ptr, "%s must be a non-empty array", k)
	}
	if k == "oneOf" {
		s.note(ptr, "oneOf rewritten as anyOf")
	}
	outB := make([]any, 0, len(branches))
	for i, b := range branches {
		t, err := s.node(b, ptrJoin(ptrJoin(ptr, k), fmt.Sprint(i)), depth)
		if err != nil {
			return err
		}
		outB = append(outB, t)
	}
	out["anyOf"] = outB
	return nil
}

// closeObject closes an object schema: additionalProperties false, every
// property required, the optional ones nullable.
func (s *strictifier) closeObject(out, o obj, ptr string, depth int) error {
	if depth > strictMaxDepth {
		return s.notStrict(ptr, "objects nested more than %d deep", strictMaxDepth)
	}
	props, _ := o["properties"].(obj)
	ap, hasAP := o["additionalProperties"]
	if hasAP && ap != false {
		return s.notStrict(ptr, "an open map (additionalProperties is not false)")
	}
	if len(props) == 0 && !hasAP {
		return s.notStrict(ptr, "an open object (no properties and no additionalProperties:false)")
	}
	req := requiredSet(o)
	tprops := obj{}
	names := sortedKeys(props)
	for _, name := range names {
		p := ptrJoin(ptrJoin(ptr, "properties"), name)
		t, err := s.node(props[name], p, depth+1)
		if err != nil {
			return err
		}
		s.props++
		if !req[name] {
			t = nullable(t.(obj))
			s.note(p, "optional property made required and nullable")
		}
		tprops[name] = t
	}
	reqList := make([]any, len(names))
	for i, n := range names {
		reqList[i] = n
	}
	if !hasType(out, "object") {
		out["type"] = "object"
	}
	out["properties"], out["required"], out["additionalProperties"] = tprops, reqList, false
	return nil
}

// nullable widens a schema to also accept null, the strict-mode spelling
// of "optional".
func nullable(o obj) obj {
	if _, ok := o["$ref"]; ok {
		return obj{"anyOf": []any{o, obj{"type": "null"}}}
	}
	if branches, ok := o["anyOf"].([]any); ok {
		for _, b := range branches {
			if bo, ok := b.(obj); ok && len(bo) == 1 && bo["type"] == "null" {
				return o
			}
		}
		o["anyOf"] = append(slices.Clone(branches), obj{"type": "null"})
		return o
	}
	if types := typeList(o); len(types) > 0 && !slices.Contains(types, "null") {
		list := make([]any, 0, len(types)+1)
		for _, t := range types {
			list = append(list, t)
		}
		o["type"] = append(list, "null")
	}
	if enum, ok := o["enum"].([]any); ok && !slices.Contains(enum, nil) {
		o["enum"] = append(slices.Clone(enum), nil)
	}
	return o
}

// checkStrict lists every way schema breaks OpenAI's strict-mode rules
// (none when it obeys them): a root object, only supported keywords,
// every object closed with every property required, bare $refs to
// definitions, at most 10 levels and 5000 properties.
func checkStrict(schema json.RawMessage) []string {
	v, err := decodeJSON(schema)
	if err != nil {
		return []string{"not valid JSON: " + err.Error()}
	}
	c := &strictChecker{root: v}
	root, ok := v.(obj)
	if !ok || root["type"] != "object" {
		return []string{`/: the root must be {"type":"object"}`}
	}
	c.walk(root, "", 1)
	for _, defsKey := range []string{"$defs", "definitions"} {
		defs, _ := root[defsKey].(obj)
		for _, name := range sortedKeys(defs) {
			c.walk(defs[name], ptrJoin("/"+defsKey, name), 1)
		}
	}
	if c.props > strictMaxProps {
		c.fail("", "%d properties, more than %d", c.props, strictMaxProps)
	}
	if c.enums > strictMaxEnums {
		c.fail("", "%d enum values, more than %d", c.enums, strictMaxEnums)
	}
	if c.chars > strictMaxChars {
		c.fail("", "property, definition and enum strings total %d characters, more than %d", c.chars, strictMaxChars)
	}
	return c.violations
}

type strictChecker struct {
	root         any
	props        int
	enums, chars int
	violations   []string
}

func (c *strictChecker) fail(ptr, format string, args ...any) {
	c.violations = append(c.violations, orRoot(ptr)+": "+fmt.Sprintf(format, args...))
}

// walk checks one subschema.
func (c *strictChecker) walk(v any, ptr string, depth int) {
	o, ok := v.(obj)
	if !ok {
		c.fail(ptr, "not a schema object")
		return
	}
	if ref, ok := o["$ref"]; ok {
		c.checkRef(o, ref, ptr)
		return
	}
	for k, val := range o {
		c.checkKeyword(k, val, ptr, depth)
	}
	if o["type"] == nil && o["enum"] == nil && o["anyOf"] == nil {
		c.fail(ptr, "no type, enum or anyOf")
	}
	if _, hasProps := o["properties"]; hasProps || hasType(o, "object") {
		c.checkObject(o, ptr, depth)
	}
}

func (c *strictChecker) checkRef(o obj, ref any, ptr string) {
	s, _ := ref.(string)
	if len(o) != 1 {
		c.fail(ptr, "$ref with sibling keywords")
	}
	if s != "#" && !isDefRef(s) {
		c.fail(ptr, "$ref %v is not the root or a definition", ref)
	} else if _, err := resolveRef(c.root, s); err != nil {
		c.fail(ptr, "%v", err)
	}
}

func (c *strictChecker) checkKeyword(k string, val any, ptr string, depth int) {
	switch {
	case k == "format":
		if f, _ := val.(string); !strictFormat(f) {
			c.fail(ptr, "format %v is not supported", val)
		}
	case k != "enum" && strictKeeps(k), k == "properties", k == "required", k == "additionalProperties":
	case k == "enum":
		vals, ok := val.([]any)
		if !ok {
			c.fail(ptr, "enum must be an array")
		}
		c.enums += len(vals)
		for _, v := range vals {
			if s, ok := v.(string); ok {
				c.chars += len(s)
			}
		}
	case (k == "$defs" || k == "definitions") && ptr == "":
		defs, _ := val.(obj)
		for name := range defs {
			c.chars += len(name)
		}
	case k == "items":
		c.walk(val, ptrJoin(ptr, "items"), depth+1)
	case k == "anyOf":
		branches, ok := val.([]any)
		if !ok || len(branches) == 0 {
			c.fail(ptr, "anyOf must be a non-empty array")
		}
		for i, b := range branches {
			c.walk(b, ptrJoin(ptrJoin(ptr, "anyOf"), fmt.Sprint(i)), depth)
		}
	default:
		c.fail(ptr, "keyword %q is not allowed", k)
	}
}

func (c *strictChecker) checkObject(o obj, ptr string, depth int) {
	if depth > strictMaxDepth {
		c.fail(ptr, "nested more than %d deep", strictMaxDepth)
	}
	if o["additionalProperties"] != false {
		c.fail(ptr, "additionalProperties must be false")
	}
	props, ok := o["properties"].(obj)
	if !ok {
		c.fail(ptr, "an object needs properties")
	}
	var req []string
	for k := range requiredSet(o) {
		req = append(req, k)
	}
	sort.Strings(req)
	if keys := sortedKeys(props); !slices.Equal(keys, req) {
		c.fail(ptr, "required %v must list every property %v", req, keys)
	}
	for _, name := range sortedKeys(props) {
		c.props++
		c.chars += len(name)
		c.walk(props[name], ptrJoin(ptrJoin(ptr, "properties"), name), depth+1)
	}
}
