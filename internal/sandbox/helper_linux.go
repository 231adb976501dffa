//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main makes the running program the sandbox helper when it was started
// as one (its first argument is the helper flag): it confines the tool's
// program and never returns. Otherwise it returns at once. Call it first
// thing in main (and in TestMain of tests that run confined programs) so
// the program can serve as its own helper.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != helperFlag {
		return
	}
	runtime.GOMAXPROCS(1)
	os.Exit(runHelper(os.Args[2:]))
}

// runHelper is the helper in one of its four roles: the probe, the
// launcher (launchFlag) a worker starts for a call, which starts the
// sandbox's init (args[0] the spec; see init_linux.go), or, started by
// that init, the confiner (confineFlag) that restricts itself and execs
// the program.
func runHelper(args []string) int {
	if len(args) == 1 && args[0] == "--probe" {
		return runProbe()
	}
	role := ""
	if len(args) > 0 && (args[0] == confineFlag || args[0] == launchFlag) {
		role, args = args[0], args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintf(os.Stderr, "%susage: %s SPEC PROGRAM [ARG…]\n", stderrPrefix, helperFlag)
		return ExitSetup
	}
	var s spec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		fmt.Fprintf(os.Stderr, "%sbad spec: %v\n", stderrPrefix, err)
		return ExitSetup
	}
	switch role {
	case confineFlag:
		return runConfiner(s, args[1:])
	case launchFlag:
		return runLauncher(s, args)
	}
	return runInit(s, args[0], args[1:])
}

// runProbe answers the probe, once it checked (in the namespaces the
// worker started it in) that it can build a sandbox's view: a private
// mount namespace and a /proc of its own PID namespace.
func runProbe() int {
	abi, err := landlockABI()
	if err != nil {
		abi = 0
	}
	if err := probeView(); err != nil {
		fmt.Printf("%sno view: %v\n", stderrPrefix, err)
		return ExitSetup
	}
	fmt.Printf("%sok abi=%d uid=%d wire=%d\n", stderrPrefix, abi, os.Getuid(), wireVersion)
	return 0
}

// runConfiner confines this process per s (Landlock, no_new_privs,
// resource limits) and execs argv[0] with argv. It runs inside the
// sandbox's view, in a user namespace of its own, with no capability.
func runConfiner(s spec, argv []string) int {
	// Landlock and no_new_privs bind the calling thread, and execve keeps
	// that thread's credentials: stay on it until the exec.
	runtime.LockOSThread()
	if err := restrict(s); err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", stderrPrefix, err)
		return ExitSetup
	}
	if err := setLimits(0, s.Limits); err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", stderrPrefix, err)
		return ExitSetup
	}
	env := os.Environ()
	if s.HelperEnv == 1 && len(env) > 0 && env[0] == helperEnv {
		env = env[1:]
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "%sexec %s: %v\n", stderrPrefix, argv[0], err)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return ExitExecDenied
	}
	return ExitSetup
}

// Filesystem rights (see the Landlock documentation).
const (
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// handledFS is every filesystem right the kernel's ABI knows: all of them
// are denied unless granted.
func handledFS(abi int) uint64 {
	h := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1) - 1 // ABI 1: execute … make_sym
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrict applies the spec's Landlock ruleset to the calling thread.
func restrict(s spec) error {
	fd, err := buildRuleset(s)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return confineThread(fd)
}

// confineThread sets no_new_privs on the calling thread and confines it
// with the ruleset fd (both bind this thread only, and what it execs).
func confineThread(ruleset int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if err := restrictSelf(ruleset); err != nil {
		return fmt.Errorf("landlock_restrict_self: %v", err)
	}
	return nil
}

// buildRuleset makes the spec's Landlock ruleset: every right the kernel
// knows handled, the grants added. The caller closes the returned fd.
func buildRuleset(s spec) (int, error) {
	abi, err := landlockABI()
	if err != nil || abi < 1 {
		return -1, fmt.Errorf("landlock is not available (%v)", err)
	}
	attr := rulesetAttr{handledFS: handledFS(abi)}
	if s.NetHandled && abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, err := createRuleset(&attr)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %v", err)
	}
	if err := addRules(fd, s, attr); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// addRules adds the spec's path and port grants to the ruleset fd.
func addRules(fd int, s spec, attr rulesetAttr) error {
	for _, g := range []struct {
		paths  []string
		rights uint64
	}{{s.RX, readRights}, {s.RW, attr.handledFS}} {
		for _, p := range g.paths {
			if err := addPath(fd, p, g.rights&attr.handledFS); err != nil {
				return err
			}
		}
	}
	if attr.handledNet != 0 {
		for _, port := range s.Ports {
			na := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if err := addPortRule(fd, &na); err != nil {
				return fmt.Errorf("landlock port rule %d: %v", port, err)
			}
		}
	}
	return nil
}

// addPath grants rights beneath path (a file gets only the rights that
// apply to files). A path that no longer exists is skipped: it grants
// nothing, which only denies more.
func addPath(ruleset int, path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %v", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	attr := pathBeneathAttr{allowed: rights, parentFD: int32(fd)}
	if err := addPathRule(ruleset, &attr); err != nil {
		return fmt.Errorf("landlock rule for %s: %v", path, err)
	}
	return nil
}

// rlimit is one resource limit of a Limits.
type rlimit struct {
	name string
	res  int
	lim  unix.Rlimit
}

// rlimits are l's resource limits, soft and hard alike (CPU's hard limit a
// second later, so SIGXCPU comes first and says why).
func (l Limits) rlimits() []rlimit {
	var out []rlimit
	add := func(name string, res int, n, extra uint64) {
		if n > 0 {
			out = append(out, rlimit{name, res, unix.Rlimit{Cur: n, Max: n + extra}})
		}
	}
	add("cpu", unix.RLIMIT_CPU, uint64(l.CPUSeconds), 1)
	add("data", unix.RLIMIT_DATA, uint64(l.MemoryMB)<<20, 0)
	add("nofile", unix.RLIMIT_NOFILE, uint64(l.Files), 0)
	add("nproc", unix.RLIMIT_NPROC, uint64(l.Processes), 0)
	return out
}

// setLimits sets l's resource limits on process pid (0: this process).
func setLimits(pid int, l Limits) error {
	for _, r := range l.rlimits() {
		if err := unix.Prlimit(pid, r.res, &r.lim, nil); err != nil {
			return fmt.Errorf("prlimit %s: %v", r.name, err)
		}
	}
	return nil
}
