//go:build linux

package supervise

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// superviseScript runs the tool ("$@", argv passed through verbatim, never
// parsed by the shell) as the child of a small POSIX-shell supervisor that
// leads the tool's process group. The kernel sends the supervisor SIGUSR1
// when the worker dies — kill -9 included (Linux's parent-death signal) —
// and the supervisor then does what the worker would have: SIGTERM to the
// whole group, up to the kill grace for the tool to exit, then SIGKILL to
// the group, grandchildren included. While the worker lives the
// supervisor is transparent: it ignores the worker's own SIGTERM (the
// group gets it anyway), passes stdin through, and exits with the tool's
// status, dying by the tool's signal when the tool died by one. It waits
// once before testing whether the tool lives: a tool that exits at once may
// be reaped before any test, and then only wait still knows its status
// (testing first lost the status of fast failures: exit 0 for exit 2).
const superviseScript = `trap ':' TERM INT HUP
trap 'trap "" USR1; kill -TERM 0 2>/dev/null; i=0; while [ $i -lt %d ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; i=$((i+1)); done; kill -KILL 0' USR1
exec 3<&0
"$@" <&3 3<&- &
pid=$!
exec 3<&-
wait "$pid"; st=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; st=$?; done
if [ "$st" -gt 128 ]; then trap - TERM INT HUP; kill -$((st - 128)) $$; fi
exit "$st"`

// Command builds the supervised command for argv (argv[0] already
// resolved to a path) with a kill grace of grace.
func Command(path string, args []string, grace time.Duration) *exec.Cmd {
	polls := max(int(grace/(50*time.Millisecond)), 1)
	shArgs := append([]string{"-c", fmt.Sprintf(superviseScript, polls), "toolmesh-supervise", path}, args...)
	cmd := exec.Command("/bin/sh", shArgs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGUSR1}
	return cmd
}

// Start starts cmd from an OS thread that stays alive until exited closes:
// Linux sends the parent-death signal when the forking thread exits, not
// the process, and Go may retire threads.
func Start(cmd *exec.Cmd, exited <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		err := cmd.Start()
		errc <- err
		if err == nil {
			<-exited
		}
	}()
	return <-errc
}
