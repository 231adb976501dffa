package worker

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMCPStructured(t *testing.T) {
	cases := []struct {
		name, data, want, err string
	}{
		{name: "content only", data: `{"content":[{"type":"text","text":"hi"}]}`},
		{name: "every block kind and structured", data: `{"content":[{"type":"text","text":"t"},{"type":"image","data":"AA==","mimeType":"image/png"},` +
			`{"type":"audio","data":"AA==","mimeType":"audio/wav"},{"type":"resource","resource":{"uri":"x://a","text":"r"}},` +
			`{"type":"resource_link","uri":"x://b","name":"b"}],"structuredContent":{"a":1},"_meta":{"k":"v"}}`, want: `{"a":1}`},
		{name: "empty content", data: `{"content":[]}`},
		{name: "not an object", data: `[1]`, err: "must be an object"},
		{name: "no content", data: `{"structuredContent":{}}`, err: `"content" must be an array`},
		{name: "extra member", data: `{"content":[],"isError":true}`, err: `no member "isError"`},
		{name: "unknown block", data: `{"content":[{"type":"video","data":"x"}]}`, err: `content[0]: unknown content block type "video"`},
		{name: "image without mimeType", data: `{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA=="}]}`, err: `content[1]: a image block needs "mimeType"`},
		{name: "structured not an object", data: `{"content":[],"structuredContent":[1]}`, err: "must be an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mcpStructured(json.RawMessage(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("= %s, %v; want %s", got, err, c.want)
			}
		})
	}
}
