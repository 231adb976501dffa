package configkeys

import (
	"fmt"
	"sort"
	"strings"
)

// Node is what one place of a document may hold. A nil *Node holds any
// value (a JSON Schema, an env map); a Node with Fields is an object of
// exactly those keys; Each is the shape of a list's elements; AnyKey is
// an object of keys the user names (arg_rules), each value of that shape.
// A value of another kind than the Node expects is left to the decoder.
type Node struct {
	Fields map[string]*Node
	Each   *Node
	AnyKey *Node
}

// Object is a Node of the given keys.
func Object(fields map[string]*Node) *Node { return &Node{Fields: fields} }

// ListOf is a list Node whose elements are each of shape n.
func ListOf(n *Node) *Node { return &Node{Each: n} }

// MapOf is an object Node of keys the user names, each value of shape n.
func MapOf(n *Node) *Node { return &Node{AnyKey: n} }

// Keys is an object Node whose keys are names, each holding any value.
func Keys(names ...string) *Node {
	f := make(map[string]*Node, len(names))
	for _, n := range names {
		f[n] = nil
	}
	return Object(f)
}

// UnknownKeyError is a key the document holds where it is not valid.
type UnknownKeyError struct {
	// Where is the place that holds the key (tools[0].binding.cli; ""
	// for the top of the document).
	Where string
	// Key is the unknown key.
	Key string
	// Suggest is the nearest valid key: a key of Where, or, when
	// Misplaced, the whole path of the place where Key is valid.
	Suggest string
	// Misplaced says Key is valid, but at Suggest rather than in Where.
	Misplaced bool
	// Near says Suggest is near enough to Key to be a likely typo.
	Near bool
	// Valid lists the keys Where may hold.
	Valid []string
	// Removed says why a key that once was valid no longer is, so an old
	// file's author learns to delete it rather than look for its new name.
	Removed string
}

// Error names the key and the nearest valid one.
func (e *UnknownKeyError) Error() string {
	msg := fmt.Sprintf("unknown field %q", e.Key)
	if e.Where != "" {
		msg += " in " + e.Where
	}
	switch {
	case e.Removed != "":
		return fmt.Sprintf("%s: %s; delete it", msg, e.Removed)
	case e.Misplaced:
		return fmt.Sprintf("%s: %s is not valid there; it belongs at %s", msg, e.Key, e.Suggest)
	case e.Near:
		return fmt.Sprintf("%s (did you mean %s?)", msg, e.Suggest)
	case e.Suggest != "":
		return fmt.Sprintf("%s (the nearest valid key is %s; valid here: %s)", msg, e.Suggest, strings.Join(e.Valid, ", "))
	}
	return msg
}

// Check walks doc (as encoding/json or a YAML decoder decodes into any)
// along root and returns the first unknown key, in document order of the
// sorted keys; nil when every key is valid where it stands.
func Check(doc any, root *Node) error {
	return check(doc, root, nil, root)
}

func check(v any, n *Node, path []string, root *Node) error {
	if n == nil {
		return nil
	}
	switch t := v.(type) {
	case []any:
		for i, x := range t {
			if err := check(x, n.Each, append(path, fmt.Sprintf("[%d]", i)), root); err != nil {
				return err
			}
		}
	case map[string]any:
		return checkObject(t, n, path, root)
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = x
		}
		return checkObject(m, n, path, root)
	}
	return nil
}

func checkObject(m map[string]any, n *Node, path []string, root *Node) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		next := n.AnyKey
		if n.Fields != nil {
			var ok bool
			if next, ok = n.Fields[k]; !ok {
				return unknown(k, n, path, root)
			}
		} else if n.AnyKey == nil {
			continue // a list or a value where an object stood: the decoder's to refuse
		}
		if err := check(m[k], next, append(path, k), root); err != nil {
			return err
		}
	}
	return nil
}

// unknown is the error of key k at path: valid elsewhere (the place
// nearest to path that holds it), near a key valid here (a typo), or
// else the nearest key valid here.
func unknown(k string, n *Node, path []string, root *Node) error {
	e := &UnknownKeyError{Where: render(path), Key: k, Removed: removed(k)}
	if e.Removed != "" {
		return e
	}
	if at := elsewhere(k, path, root); at != nil {
		e.Suggest, e.Misplaced = render(at), true
		return e
	}
	for f := range n.Fields {
		e.Valid = append(e.Valid, f)
	}
	sort.Strings(e.Valid)
	e.Suggest = Nearest(k, e.Valid)
	e.Near = e.Suggest != "" && Near(k, e.Valid) == e.Suggest
	return e
}

// removed says why a key of earlier tools files is no longer valid ("" for
// a key that never was).
func removed(k string) string {
	switch k {
	case "sandbox_idle":
		return "sandbox_idle was removed: each sandboxed call now starts its own confined helper, so there is no starter process to keep"
	}
	return ""
}

// elsewhere is the concrete path of the place closest to path (the
// longest shared prefix) where k is a valid key, or nil.
func elsewhere(k string, path []string, root *Node) []string {
	var best []string
	bestShared := -1
	walk(root, nil, func(tmpl []string, n *Node) {
		if _, ok := n.Fields[k]; !ok {
			return
		}
		at, shared := concrete(tmpl, path)
		if shared > bestShared {
			best, bestShared = append(at, k), shared
		}
	})
	return best
}

// walk visits every object Node under n with its path template, whose
// segments are keys, "[]" (any list index) and "*" (any user-named key).
func walk(n *Node, tmpl []string, visit func([]string, *Node)) {
	if n == nil || len(tmpl) > 16 {
		return
	}
	if n.Fields != nil {
		visit(tmpl, n)
		keys := make([]string, 0, len(n.Fields))
		for k := range n.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(n.Fields[k], append(append([]string(nil), tmpl...), k), visit)
		}
	}
	if n.Each != nil {
		walk(n.Each, append(append([]string(nil), tmpl...), "[]"), visit)
	}
	if n.AnyKey != nil {
		walk(n.AnyKey, append(append([]string(nil), tmpl...), "*"), visit)
	}
}

// concrete fills a path template from path as far as they agree and
// returns it with the length of that agreement; the rest of the template
// is written as a reader would: [0] for an index, NAME for a key.
func concrete(tmpl, path []string) ([]string, int) {
	out := make([]string, len(tmpl))
	shared := 0
	for i, seg := range tmpl {
		if i == shared && i < len(path) && matches(seg, path[i]) {
			out[i] = path[i]
			shared++
			continue
		}
		switch seg {
		case "[]":
			out[i] = "[0]"
		case "*":
			out[i] = "NAME"
		default:
			out[i] = seg
		}
	}
	return out, shared
}

func matches(seg, actual string) bool {
	switch seg {
	case "[]":
		return strings.HasPrefix(actual, "[")
	case "*":
		return !strings.HasPrefix(actual, "[")
	}
	return seg == actual
}

// render writes a path as a reader writes it: tools[0].binding.cli.
func render(path []string) string {
	var b strings.Builder
	for i, seg := range path {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}
