//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Command is one run of a Plan's program: the helper's exec.Cmd, which
// the caller starts (under its supervisor: it may set the process group
// and parent-death signal), then Wait for the program's end. The helper
// starts as a plain child (the launcher, launcher_linux.go), which starts
// the sandbox's init in new namespaces; everything the program starts
// lives in init's PID namespace and ends with it.
type Command struct {
	// Cmd is the helper's command; set its Stdin, Stdout and Stderr.
	Cmd     *exec.Cmd
	status  *os.File // the read end of the helper's status pipe
	theirs  *os.File // its write end, until Started
	started bool
}

// Command is the command that runs the program with args (its argv[1:])
// and env confined.
func (pl *Plan) Command(args, env []string) (*Command, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: status pipe: %v", err)
	}
	if env == nil {
		env = os.Environ() // as exec.Cmd would
	}
	spec := pl.statusSpec
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GOMAXPROCS=") }) {
		spec, env = pl.statusSpecEnv, append([]string{helperEnv}, env...)
	}
	argv := append([]string{pl.helper, helperFlag, launchFlag, spec, pl.Program}, args...)
	cmd := &exec.Cmd{Path: pl.helper, Args: argv, Env: env, ExtraFiles: []*os.File{w}}
	return &Command{Cmd: cmd, status: r, theirs: w}, nil
}

// Started is called once Cmd was started (or failed to start): it closes
// this process's copy of the helper's status descriptor.
func (c *Command) Started() {
	if c.theirs != nil {
		_ = c.theirs.Close()
		c.theirs = nil
	}
	c.started = c.Cmd.Process != nil
}

// Close releases a Command that was never started.
func (c *Command) Close() {
	c.Started()
	_ = c.status.Close()
}

// Wait waits for the helper and returns how the program ended: its own
// wait status and CPU time as the helper reported them, or, when the
// helper ended before reporting (it could not set the sandbox up, or was
// killed), the helper's.
func (c *Command) Wait() (*Exit, error) {
	defer c.status.Close()
	if !c.started {
		return nil, errors.New("sandbox: the command was not started")
	}
	err := c.Cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, err
	}
	line, _ := bufio.NewReader(c.status).ReadString('\n')
	if end, ok := parseStatus(line); ok {
		return end, nil
	}
	ps := c.Cmd.ProcessState
	return &Exit{Status: ps.Sys().(syscall.WaitStatus), CPU: ps.UserTime() + ps.SystemTime()}, nil
}

// parseStatus reads the helper's report of the program's end: "e STATUS
// CPU_NS".
func parseStatus(line string) (*Exit, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "e" {
		return nil, false
	}
	status, err1 := strconv.ParseUint(f[1], 10, 32)
	cpu, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return &Exit{Status: syscall.WaitStatus(status), CPU: time.Duration(cpu)}, true
}
