package tests

import (
	"encoding/json"
	"testing"

	"github.com/toolmesh/toolmesh/docs/problems"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/problembase"
)

// `toolmesh explain` prints the page of every registry code, found by its
// code, its slug or its type URI (under the default base or another).
func TestExplainEveryCode(t *testing.T) {
	for _, c := range codes.All() {
		code := envelope.Code(c)
		info, _ := codes.Lookup(code)
		page, ok := problems.Page(info.Slug)
		if !ok {
			t.Fatalf("%s has no page", code)
		}
		for _, arg := range []string{string(code), info.Slug, problembase.Registry{}.TypeURI(code),
			problembase.Registry{BaseURI: "https://docs.example.org/errors/"}.TypeURI(code)} {
			r := runCmd(t, "", "explain", arg)
			if r.code != 0 || r.stdout != page {
				t.Fatalf("explain %s: exit %d, stdout differs from the page (%d vs %d bytes); stderr %s", arg, r.code, len(r.stdout), len(page), r.stderr)
			}
		}
	}
	for _, arg := range []string{"auth_required", "https://toolmesh.dev/problems/timeout/v9", "about:blank"} {
		r := runCmd(t, "", "explain", arg, "--format", "json")
		var p envelope.Problem
		if err := json.Unmarshal([]byte(r.stderr), &p); err != nil || r.code != 2 || p.Code != envelope.CodeInvalidInput {
			t.Errorf("explain %s: exit %d stderr %s", arg, r.code, r.stderr)
		}
	}
}
