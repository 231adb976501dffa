package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// A task-augmented request whose routing headers disagree with its body
// is refused; matching ones (whitespace around them aside) pass.
func TestTaskRoutingHeaders(t *testing.T) {
	req := &taskRequest{Method: "tasks/get"}
	req.Params.TaskID = "01ABC"
	for _, tc := range []struct {
		method, name string
		ok           bool
	}{
		{"tasks/get", "01ABC", true},
		{"tasks/get", " 01ABC ", true},
		{"tasks/get", "01XYZ", false},
		{"tasks/get", "", false},
		{"tools/call", "01ABC", false},
	} {
		h := http.Header{}
		h.Set("Mcp-Method", tc.method)
		if tc.name != "" {
			h.Set("Mcp-Name", tc.name)
		}
		if got := routingMismatch(h, req) == ""; got != tc.ok {
			t.Errorf("Mcp-Method %q, Mcp-Name %q: accepted %v, want %v", tc.method, tc.name, got, tc.ok)
		}
	}
}

// An AskFirst round's request state names its task only for the tool it
// was made for, unaltered, and under the key that signed it.
func TestTaskRequestState(t *testing.T) {
	k := newStateKey()
	state := k.sign("01TASK", "conf.tool")
	if id, ok := k.verify(state, "conf.tool"); !ok || id != "01TASK" {
		t.Fatalf("verify = %q, %v; want 01TASK", id, ok)
	}
	if _, ok := k.verify(state, "conf.other"); ok {
		t.Error("a state of another tool was accepted")
	}
	if _, ok := newStateKey().verify(state, "conf.tool"); ok {
		t.Error("a state of another gateway's key was accepted")
	}
	enc, sig, _ := strings.Cut(state, ".")
	if _, ok := k.verify(enc[:len(enc)-2]+"AA."+sig, "conf.tool"); ok {
		t.Error("an altered state was accepted")
	}
}

// A rule whose glob does not parse is refused before anything is served.
func TestTaskRulesChecked(t *testing.T) {
	if err := checkTaskRules([]TaskRule{{Tools: "conf.["}}); err == nil {
		t.Error("a malformed glob was accepted")
	}
	if err := checkTaskRules([]TaskRule{{Tools: ""}}); err == nil {
		t.Error("an empty glob was accepted")
	}
	if err := checkTaskRules([]TaskRule{{Tools: "conf.*", Required: true}}); err != nil {
		t.Error(err)
	}
}
