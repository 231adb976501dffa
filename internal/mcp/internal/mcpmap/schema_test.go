package mcpmap

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNormaliseInput(t *testing.T) {
	cases := []struct {
		name, in string
		// want holds members the normalised schema must have (compared
		// as JSON), note a fragment of its $comment ("" for no change).
		want map[string]string
		note string
		err  string
	}{
		{name: "object kept", in: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			want: map[string]string{"type": `"object"`, "properties": `{"a":{"type":"string"}}`}},
		{name: "empty", in: `{}`, want: map[string]string{"type": `"object"`}, note: `no "type"`},
		{name: "absent", in: `null`, want: map[string]string{"type": `"object"`}, note: "absent"},
		{name: "true", in: `true`, want: map[string]string{"type": `"object"`}, note: "boolean schema true"},
		{name: "properties without type", in: `{"properties":{"q":{"type":"string"}},"required":["q"]}`,
			want: map[string]string{"type": `"object"`, "required": `["q"]`}, note: `no "type"`},
		{name: "type list", in: `{"type":["object","null"],"properties":{"n":{"maximum":9007199254740993}}}`,
			want: map[string]string{"type": `"object"`, "properties": `{"n":{"maximum":9007199254740993}}`}, note: "narrowed"},
		{name: "2020-12 kept", in: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}},"additionalProperties":false}`,
			want: map[string]string{"$schema": `"https://json-schema.org/draft/2020-12/schema"`, "$defs": `{"a":{"type":"string"}}`, "additionalProperties": "false"}},
		{name: "server comment kept", in: `{"$comment":"mine"}`, want: map[string]string{"type": `"object"`}, note: "The server's comment: mine"},
		{name: "remote $ref not followed", in: `{"type":"object","properties":{"user":{"$ref":"http://example.com/user.json","description":"who"},"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`,
			want: map[string]string{"properties": `{"user":{"description":"who"},"x":{"$ref":"#/$defs/a"}}`}, note: `"$ref":"http://example.com/user.json" at "/properties/user" not followed`},
		{name: "false", in: `false`, err: "boolean schema false"},
		{name: "string type", in: `{"type":"string"}`, err: `"type":"string"`},
		{name: "type list without object", in: `{"type":["string","null"]}`, err: `does not include "object"`},
		{name: "not a schema", in: `[1]`, err: "not a JSON Schema"},
		{name: "does not compile", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, err: "does not compile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, changes, err := NormaliseInput(json.RawMessage(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range c.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s (schema %s)", k, got[k], v, out)
				}
			}
			var comment string
			_ = json.Unmarshal(got["$comment"], &comment)
			if c.note == "" && (comment != "" || len(changes) > 0) {
				t.Errorf("unchanged schema got $comment %s, changes %v", comment, changes)
			}
			if c.note != "" && (!strings.Contains(comment, c.note) || !strings.Contains(comment, notePrefix) || len(changes) == 0) {
				t.Errorf("$comment %s, want the change (%q) recorded", comment, c.note)
			}
		})
	}
}

func TestNormaliseOutput(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: ``, want: ``},
		{in: `{"type":"object","properties":{"a":{"type":"integer"}}}`, want: `{"properties":{"a":{"type":"integer"}},"type":"object"}`},
		{in: `true`, want: `{"$comment":"toolmesh bridge: outputSchema is the boolean schema true; written as the equivalent object schema {}"}`},
		{in: `false`, err: "boolean schema false"},
	}
	for _, c := range cases {
		out, _, err := NormaliseOutput(json.RawMessage(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("NormaliseOutput(%s) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || string(out) != c.want {
			t.Errorf("NormaliseOutput(%s) = %s, %v; want %s", c.in, out, err, c.want)
		}
	}
}
