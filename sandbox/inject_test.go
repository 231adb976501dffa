//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// heldSh starts `sh -c script` held at its exec stop (traced by the
// calling thread, which the caller keeps locked), with the ruleset of a
// policy reading /usr and /proc as its descriptor 3, as the zygote starts
// a program; it returns the zygote that would release it, the pid and the
// read end of its stdout and stderr.
func heldSh(t *testing.T, script string) (*zygote, int, *os.File) {
	t.Helper()
	pl, err := Prepare(&Policy{Read: []string{"/usr", "/proc"}}, "/bin/sh", reachableSelf(t))
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal([]byte(pl.spec), &s); err != nil {
		t.Fatal(err)
	}
	ruleset, err := buildRuleset(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(ruleset) })
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close() })
	defer outW.Close()
	files := []uintptr{outW.Fd(), outW.Fd(), outW.Fd(), uintptr(ruleset)}
	pid, err := syscall.ForkExec("/bin/sh", []string{"/bin/sh", "-c", script}, &syscall.ProcAttr{Files: files, Sys: childAttr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, 0, nil)
	})
	held, err := awaitExec(pid)
	if err != nil || len(held) != 0 {
		t.Fatalf("exec stop: %v, signals held %v", err, held)
	}
	z := &zygote{ruleset: ruleset, execGrants: execGrants(s), uid: os.Getuid(), gid: os.Getgid()}
	return z, pid, outR
}

// A signal sent to a program while it is held at its exec (any process
// of its user may send one) does not pass for an injected call's step:
// every call still runs (its own user namespace, Landlock, no descriptor
// 3), and the signal reaches the program once it is confined.
func TestSignalWhileHeldAtExec(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	const script = "readlink /proc/self/ns/user; readlink /proc/$$/fd/3 || echo none; cat /etc/hostname >/dev/null 2>&1 && echo read || echo denied"
	cases := []struct {
		name string
		sig  syscall.Signal
		// killed: the program ends by sig, delivered after confinement.
		killed bool
	}{
		{"SIGWINCH (ignored)", syscall.SIGWINCH, false},
		{"SIGTERM (fatal)", syscall.SIGTERM, true},
		{"two signals", syscall.SIGUSR1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The program is traced by, and inherits no_new_privs (which
			// Landlock needs) from, this thread, as from the zygote's: it
			// is never unlocked and ends with the subtest.
			runtime.LockOSThread()
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				t.Fatal(err)
			}
			z, pid, out := heldSh(t, script)
			if err := syscall.Kill(pid, c.sig); err != nil {
				t.Fatal(err)
			}
			if c.name == "two signals" {
				// A second, ignored, signal: two of the three calls would
				// each take a signal stop for its step.
				if err := syscall.Kill(pid, syscall.SIGWINCH); err != nil {
					t.Fatal(err)
				}
			}
			if err := z.releaseHeld(pid, nil); err != nil {
				t.Fatal(err)
			}
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
				t.Fatal(err)
			}
			if c.killed {
				if !ws.Signaled() || ws.Signal() != c.sig {
					t.Fatalf("the program ended %v; want killed by %v, queued again after confinement", describeStatus(ws), c.sig)
				}
				return
			}
			b, _ := io.ReadAll(out)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if !ws.Exited() || ws.ExitStatus() != 0 || len(lines) != 3 || lines[0] == own || lines[1] != "none" || lines[2] != "denied" {
				t.Fatalf("ended %v, output %q; want its own user namespace (not %s), no descriptor 3, /etc/hostname denied", describeStatus(ws), b, own)
			}
		})
	}
}

// The review's case, one injected call at a time: a signal pending when
// close(ruleset) is stepped stops the program before the instruction,
// with descriptor 3 still in the register that returns the call's result.
// That stop is not taken for the step: the call runs, and the signal is
// held for later.
func TestSignalDuringAnInjectedClose(t *testing.T) {
	runtime.LockOSThread() // the tracer's thread
	defer runtime.UnlockOSThread()
	_, pid, _ := heldSh(t, "exit 0")
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		t.Fatal(err)
	}
	insn, err := setSyscall(&regs, injectedCall{call: callClose, arg0: rulesetInChild})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := swapText(pid, programCounter(&regs), insn); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	var held []syscall.Signal
	if err := stepOver(pid, &regs, len(insn), &held); err != nil {
		t.Fatal(err)
	}
	if err := syscallResult(&regs); err != nil {
		t.Fatalf("close: %v", err)
	}
	fd3, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/3")
	if err == nil || len(held) != 1 || held[0] != syscall.SIGWINCH {
		t.Fatalf("descriptor 3 %q (%v), signals held %v; want it closed and SIGWINCH held", fd3, err, held)
	}
}

// Only a SIGTRAP just past the injected instruction shows it ran; another
// signal still at the instruction is stepped again; anything else fails.
func TestClassifyStep(t *testing.T) {
	const pc, n = 0x1000, 2
	cases := []struct {
		name    string
		sig     syscall.Signal
		at      uintptr
		stepped bool
		err     bool
	}{
		{"stepped", syscall.SIGTRAP, pc + n, true, false},
		{"signal before the instruction", syscall.SIGWINCH, pc, false, false},
		{"SIGTRAP sent before the instruction", syscall.SIGTRAP, pc, false, true},
		{"signal after the instruction", syscall.SIGWINCH, pc + n, false, true},
		{"SIGTRAP elsewhere", syscall.SIGTRAP, pc + 2*n, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stepped, err := classifyStep(c.sig, c.at, pc, n)
			if stepped != c.stepped || (err != nil) != c.err {
				t.Fatalf("stepped %v, err %v; want %v, error %v", stepped, err, c.stepped, c.err)
			}
		})
	}
}

// mayExec fails closed: a program that cannot be resolved is refused too.
func TestMayExec(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	z := &zygote{execGrants: []string{dir}}
	cases := []struct {
		name, path string
		code       int // 0: allowed
	}{
		{"beneath a grant", in, 0},
		{"outside the grants", "/bin/sh", ExitExecDenied},
		{"missing", filepath.Join(dir, "missing"), ExitSetup},
		{"missing outside the grants", "/no/such/program", ExitSetup},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := z.mayExec(c.path)
			if (err == nil) != (c.code == 0) || (err != nil && execCode(err) != c.code) {
				t.Fatalf("mayExec(%s) = %v; want exit code %d", c.path, err, c.code)
			}
		})
	}
}

// What the program runs is checked again at its exec stop: a script
// beneath a grant whose interpreter is not is refused there (mayExec saw
// only the script), as Landlock refused the interpreter's exec.
func TestZygoteRefusesAnInterpreterOutsideItsGrants(t *testing.T) {
	dir := testutil.OpenDir(t, "zygote-script")
	script := filepath.Join(dir, "s")
	if err := os.WriteFile(script, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	z := zygoteFor(t, &Policy{Read: []string{dir}}) // /bin/sh and its libraries, not /bin/true
	run, end, stderr := runForStderr(t, z, script)
	if run.Pid != 0 || end.ExitCode() != ExitExecDenied || !strings.Contains(string(stderr), "exec "+script) {
		t.Fatalf("pid %d, exit %d, stderr %q; want no program, exit %d", run.Pid, end.ExitCode(), stderr, ExitExecDenied)
	}
}
