//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The helper's first role is the sandbox's init. The launcher (for a
// call; launcher_linux.go) or the worker (for a bridged server) starts it
// in new user, PID, mount, IPC and (for network none) network namespaces,
// as root of its user namespace (mapped to the worker's user, or nobody
// for a root worker). It builds the view (view_linux.go), starts itself
// again as the confiner in a user namespace of its own, with the
// program's user and no capability (the confiner restricts itself with
// Landlock, sets the limits and execs the program), forwards the signals
// the worker sends to every process of the sandbox, and reaps them all.
// When the program ends, init reports its end on descriptor 3 (the wait
// status and CPU time, when the spec asks) and exits with its code: the
// kernel then kills whatever else runs in the PID namespace, however it
// detached. If the worker dies, init gets its parent-death signal (passed
// on by the launcher); a SIGKILL of init (when the launcher dies, as when
// the worker kills its group) ends the namespace at once.

// statusFD is the descriptor init reports the program's end on.
const statusFD = 3

// forwarded are the signals init passes on to the sandbox's processes.
func forwarded() []os.Signal {
	return []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
}

// runInit is the sandbox's init: it runs argv confined per s (specJSON as
// passed) and returns the exit code to end with.
func runInit(s spec, specJSON string, argv []string) int {
	if s.Status {
		syscall.CloseOnExec(statusFD)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded()...)
	if err := buildView(append(append(append([]string(nil), s.RX...), s.RW...), s.View...)); err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", stderrPrefix, err)
		return ExitSetup
	}
	pid, err := startConfiner(s, specJSON, argv)
	if err != nil {

		fmt.Fprintf(os.Stderr, "%sstart the program: %v\n", stderrPrefix, err)
		return ExitSetup
	}
	if !covered("/proc", append(append([]string(nil), s.RX...), s.RW...)) {
		// Only init needed it (to map the confiner's user): a program
		// not granted /proc does not see it at all.
		_ = unix.Unmount("/proc", unix.MNT_DETACH)
	}
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-1, sig.(syscall.Signal))
		}
	}()
	ws, cpu := reapAll(pid)
	if s.Status {
		_, _ = unix.Write(statusFD, fmt.Appendf(nil, "e %d %d\n", uint32(ws), cpu.Nanoseconds()))
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// startConfiner starts this program again as the confiner of argv, in a
// user namespace of its own that maps the program's user and group to
// init's (root here, the worker's user outside): the program has no
// capability, and its process limit counts only its own processes. Its
// standard files are init's.
func startConfiner(s spec, specJSON string, argv []string) (int, error) {
	args := append([]string{"/proc/self/exe", helperFlag, confineFlag, specJSON}, argv...)
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: s.UID, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: s.GID, HostID: 0, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	return syscall.ForkExec(args[0], args, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: attr})
}

// reapAll reaps every process that ends in the sandbox (orphans come to
// init) until the program pid ends, and returns its wait status and the
// CPU time it and what it waited for used.
func reapAll(pid int) (syscall.WaitStatus, time.Duration) {
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		got, err := syscall.Wait4(-1, &ws, 0, &ru)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return syscall.WaitStatus(ExitSetup << 8), 0
		case got == pid:
			return ws, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
}
