package provider

import (
	"fmt"
	"strings"
)

// keyword lowers one keyword of o into out.
func (l *legacyLowerer) keyword(out, o obj, k, ptr string) error {
	v := o[k]
	switch {
	case k == "type":
		return l.typ(out, v, ptr)
	case legacyKeeps(k):
		out[k] = v
	case k == "examples":
		if ex, ok := v.([]any); ok && len(ex) > 0 {
			out["example"] = ex[0]
		}
	case k == "enum" || k == "const":
		l.enum(out, o, k, ptr)
	case k == "properties":
		props, _ := v.(obj)
		lp := obj{}
		for _, name := range sortedKeys(props) {
			t, err := l.node(props[name], ptrJoin(ptrJoin(ptr, "properties"), name))
			if err != nil {
				return err
			}
			lp[name] = t
		}
		out["properties"] = lp
	case k == "required":
		out[k] = v
	case k == "items":
		t, err := l.node(v, ptrJoin(ptr, "items"))
		if err != nil {
			return err
		}
		out["items"] = t
	case k == "anyOf" || k == "oneOf":
		return l.union(out, v, k, ptr)
	case k == "$schema" || k == "$id" || k == "$comment" || k == "$defs" || k == "definitions":
	default:
		l.note(ptr, "%s dropped (no legacy form)", k)
	}
	return nil
}

// typ upper-cases the type; ["T","null"] becomes T plus nullable, and
// several non-null types become an anyOf.
func (l *legacyLowerer) typ(out obj, v any, ptr string) error {
	types := typeList(obj{"type": v})
	var nonNull []string
	for _, t := range types {
		if t == "null" {
			out["nullable"] = true
		} else {
			nonNull = append(nonNull, strings.ToUpper(t))
		}
	}
	switch len(nonNull) {
	case 0:
		out["type"] = "NULL"
	case 1:
		out["type"] = nonNull[0]
	default:
		branches := make([]any, len(nonNull))
		for i, t := range nonNull {
			branches[i] = obj{"type": t}
		}
		out["anyOf"] = branches
		l.note(ptr, "type list %v lowered to anyOf", types)
	}
	return nil
}

// enum keeps string enums (the only kind the subset has); const becomes a
// one-value enum.
func (l *legacyLowerer) enum(out, o obj, k, ptr string) {
	vals := []any{o[k]}
	if k == "enum" {
		vals, _ = o[k].([]any)
	}
	strs := make([]any, 0, len(vals))
	for _, e := range vals {
		s, ok := e.(string)
		if !ok {
			if e == nil {
				out["nullable"] = true
				continue
			}
			l.note(ptr, "%s with non-string values dropped (legacy enums are strings)", k)
			return
		}
		strs = append(strs, s)
	}
	out["enum"] = strs
	if _, typed := o["type"]; !typed {
		out["type"] = "STRING"
	}
}

func (l *legacyLowerer) union(out obj, v any, k, ptr string) error {
	branches, _ := v.([]any)
	if k == "oneOf" {
		l.note(ptr, "oneOf lowered to anyOf")
	}
	lb := make([]any, 0, len(branches))
	for i, b := range branches {
		t, err := l.node(b, ptrJoin(ptrJoin(ptr, k), fmt.Sprint(i)))
		if err != nil {
			return err
		}
		lb = append(lb, t)
	}
	out["anyOf"] = lb
	return nil
}
