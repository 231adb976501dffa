//go:build linux

package supervise

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// The shell supervisor exits with its tool's status, also when the tool
// fails at once: it used to test whether the tool lived before waiting,
// and a tool already reaped then counted as exit 0.
func TestSupervisorKeepsAFastFailuresStatus(t *testing.T) {
	for i := range 200 {
		cmd := Command("/bin/false", nil, time.Second)
		exited := make(chan struct{})
		if err := Start(cmd, exited); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		close(exited)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("run %d: /bin/false under the supervisor ended %v, want exit status 1", i, err)
		}
	}
}
