//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A helper from another build is refused at the probe, with a message
// naming both versions, and the search stops there: the running binary,
// a working helper listed after it, is not taken in its place. Something
// that is no helper at all is passed over, as before.
func TestProbeRefusesAnotherWireVersion(t *testing.T) {
	self := reachableSelf(t)
	dir := testutil.OpenDir(t, "wire-version") // reachable by nobody, as which a root worker's helper runs
	for _, tc := range []struct {
		name, answer string
		problem      string // "" : the probe takes self
	}{
		{"older build, no version", `echo "toolmesh-sandbox: ok abi=7 uid=$(id -u)"`, "speaks sandbox wire version 1 and this worker 4"},
		{"newer build", `echo "toolmesh-sandbox: ok abi=7 uid=$(id -u) wire=5"`, "speaks sandbox wire version 5 and this worker 4"},
		{"not a helper", `echo hello`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := writeScript(t, dir, strings.ReplaceAll(tc.name, " ", "_"), tc.answer)
			s := ProbeHelpers(t.Context(), []string{h, self})
			if tc.problem == "" {
				if s.Problem != "" || s.Helper != self {
					t.Fatalf("got %+v, want the running binary as helper", s)
				}
				return
			}
			if s.Helper != "" || !strings.Contains(s.Problem, tc.problem) || !strings.Contains(s.Problem, h) {
				t.Fatalf("got %+v, want a refusal of %s with %q", s, h, tc.problem)
			}
		})
	}
}
