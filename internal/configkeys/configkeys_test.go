package configkeys

import (
	"errors"
	"strings"
	"testing"
)

// Each unknown key is named with its place and the nearest valid key:
// a typo's correction, the place a misplaced key belongs, or else the
// nearest key of its own place.
func TestCheckNamesTheNearestValidKey(t *testing.T) {
	shape := Object(map[string]*Node{
		"sandbox": Keys("read"),
		"tools": ListOf(Object(map[string]*Node{
			"name":    nil,
			"sandbox": Keys("read"),
			"binding": Object(map[string]*Node{"cli": Object(map[string]*Node{
				"cmd": nil, "rules": MapOf(Keys("no_dash")),
			})}),
		})),
	})
	tool := func(binding map[string]any) map[string]any {
		return map[string]any{"tools": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "binding": map[string]any{"cli": binding}}}}
	}
	cases := []struct {
		doc  any
		want string
	}{
		{map[string]any{"tool": []any{}}, `unknown field "tool" (did you mean tools?)`},
		{tool(map[string]any{"cmd": "x", "sandbox": map[string]any{}}), `unknown field "sandbox" in tools[1].binding.cli: sandbox is not valid there; it belongs at tools[1].sandbox`},
		{tool(map[string]any{"cdm": "x"}), `unknown field "cdm" in tools[1].binding.cli (did you mean cmd?)`},
		{tool(map[string]any{"frobnicate": 1}), `unknown field "frobnicate" in tools[1].binding.cli (the nearest valid key is cmd; valid here: cmd, rules)`},
		{tool(map[string]any{"rules": map[any]any{"x": map[string]any{"nodash": true}}}), `unknown field "nodash" in tools[1].binding.cli.rules.x (did you mean no_dash?)`},
	}
	for _, c := range cases {
		err := Check(c.doc, shape)
		var ue *UnknownKeyError
		if !errors.As(err, &ue) || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
	ok := tool(map[string]any{"cmd": "x", "rules": map[string]any{"p": map[string]any{"no_dash": true}}})
	if err := Check(ok, shape); err != nil {
		t.Errorf("a valid document: %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"héllo", "hello", 1}} {
		if got := EditDistance(c.a, c.b); got != c.d {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

// TestRemovedKeySaysSo: a key earlier files could hold is refused with
// why it went, not with a look-alike to try instead.
func TestRemovedKeySaysSo(t *testing.T) {
	doc := map[string]any{"defaults": map[string]any{"sandbox_idle": "1m"}}
	err := Check(doc, ToolsFile())
	if err == nil || !strings.Contains(err.Error(), "sandbox_idle was removed") || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("got %v", err)
	}
}
