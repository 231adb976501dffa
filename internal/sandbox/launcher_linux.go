//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// The launcher is what a worker starts for each call: a plain child, which
// Go starts with vfork, at a cost that does not depend on the worker's
// size. Go never uses vfork for a child in a new user namespace: it forks
// the parent whole (copying its page tables, then tearing the copy down at
// the exec), which for a worker holding a few hundred megabytes costs tens
// of milliseconds a call. The launcher is small, so that fork is cheap
// here: it starts the sandbox's init in its namespaces (namespaceAttr),
// passes on the signals it gets, and exits as init did. Its death kills
// init (and so the whole sandbox) through init's parent-death signal.

// runLauncher starts this program as the sandbox's init with the spec
// and argv as given (specAndArgv[0] the spec as passed), and returns the
// exit code to end with.
func runLauncher(s spec, specAndArgv []string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded()...)
	// init's parent-death signal comes when the thread that forked it
	// ends: stay on it.
	runtime.LockOSThread()
	attr := namespaceAttr(s.NewNet)
	// init leads a group of its own, so a signal to the launcher's group
	// reaches the sandbox once, passed on from here.
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
	files := []uintptr{0, 1, 2}
	if s.Status {
		files = append(files, statusFD)
	}
	argv := append([]string{"/proc/self/exe", helperFlag}, specAndArgv...)
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Env: os.Environ(), Files: files, Sys: attr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%sstart the sandbox: %v\n", stderrPrefix, err)
		return ExitSetup
	}
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(pid, sig.(syscall.Signal))
		}
	}()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		// init was killed before it could report: the worker then sees
		// the launcher killed as it would have seen init.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
