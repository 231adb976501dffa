package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The presence beacon's wire shape is pinned by a golden file.
func TestBeaconWireShape(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "beacon.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(Beacon{WorkerID: "01J0000000000000000000WKR1", State: BeaconUp, Revision: 3, IntervalMS: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatalf("beacon\n got  %s\n want %s", got, want)
	}
}

// withoutMember drops one top-level member and a comma beside it, leaving
// the bytes json.Marshal writes when the member is omitted.
func TestWithoutMember(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"binding":{"cli":{}},"name":"a"}`, `{"name":"a"}`},
		{`{"name":"a","binding":{"cli":{}},"tags":["binding"]}`, `{"name":"a","tags":["binding"]}`},
		{`{"name":"a","binding":"x"}`, `{"name":"a"}`},
		{`{"binding":null}`, `{}`},
		{`{"name":"a","d":{"binding":1}}`, `{"name":"a","d":{"binding":1}}`},
		{`{"name":"binding"}`, `{"name":"binding"}`},
		{`{}`, `{}`},
		{`[1]`, `[1]`},
	} {
		if got := withoutMember([]byte(c.in), "binding"); string(got) != c.want {
			t.Errorf("withoutMember(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
