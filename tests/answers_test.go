package tests

import (
	"encoding/json"
	"testing"
)

// Issue 21's defects in what the toolmesh command reports, each checked
// against the built binary and a real `toolmesh dev` mesh.

// An echo result with a member named success (or id) is a successful
// call: it arrives whole under "result" and the command exits 0.
func TestCommandResultCollision(t *testing.T) {
	_, url := startDev(t)
	for _, args := range []string{`{"message":"m","success":"yes"}`, `{"message":"m","id":"mine"}`} {
		r := runCmd(t, "", "call", "echo", "--server", url, "--args", args)
		var resp struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &resp) != nil || !resp.Success || string(resp.Result) != args {
			t.Errorf("echo %s: want exit 0 and the result whole: %+v", args, r)
		}
	}
}
