//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// zygoteFor is a Zygote for /bin/sh under p, with the test binary as its
// helper (TestMain calls Main).
func zygoteFor(t *testing.T, p *Policy) *Zygote {
	t.Helper()
	self := reachableSelf(t)
	if s := ProbeHelpers(t.Context(), []string{self}); s.Problem != "" {
		t.Fatalf("this host cannot run sandboxed programs: %s", s.Problem)
	}
	pl, err := Prepare(p, "/bin/sh", self)
	if err != nil {
		t.Fatal(err)
	}
	z := NewZygote(pl, time.Second, 0)
	t.Cleanup(func() { _ = z.Close() })
	return z
}

// reachableSelf is the test binary, copied where nobody (a root worker's
// confined programs' user) can run it when the test runs as root.
func reachableSelf(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		return self
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.OpenDir(t, "zygote-test")
	path := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// runSh runs `sh -c script` through z and returns its stdout, stderr and end.
func runSh(t *testing.T, z *Zygote, script string) (string, string, *Exit) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	devNull, _ := os.Open(os.DevNull)
	defer devNull.Close()
	run, err := z.Start([]string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin"}, devNull, outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := io.ReadAll(outR)
	stderr, _ := io.ReadAll(errR)
	end, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(stdout), string(stderr), end
}

// A zygote's programs are confined as the per-call helper's were: their
// reads outside the grants fail, they run as the worker's user in a user
// namespace of their own, with the limits set, and two runs in a row each
// get a fresh process count.
func TestZygoteConfinesEachProgram(t *testing.T) {
	z := zygoteFor(t, &Policy{Read: []string{"/usr", "/proc"}, Limits: Limits{Processes: 8, CPUSeconds: 7, Files: 32}})
	checkConfinement(t, z)
}

// checkConfinement runs TestZygoteConfinesEachProgram's cases through z,
// whose policy reads /usr and /proc with processes 8, cpu_seconds 7 and
// files 32.
func checkConfinement(t *testing.T, z *Zygote) {
	t.Helper()
	uid := strconv.Itoa(os.Getuid())
	if os.Getuid() == 0 {
		uid = strconv.Itoa(RootRunsAs)
	}
	cases := []struct {
		name, script, wantOut, wantErr string
		code                           int
	}{
		{"echo", "echo hi", "hi\n", "", 0},
		{"exit code", "exit 3", "", "", 3},
		{"read outside its grants", "cat /etc/hostname", "", "Permission denied", 1},
		{"runs as the worker's user", "id -u", uid + "\n", "", 0},
		{"limits set", "grep -E '^Max (cpu time|processes|open files)' /proc/self/limits | tr -s ' '",
			"Max cpu time 7 8 seconds \nMax processes 8 8 processes \nMax open files 32 32 files \n", "", 0},
		// The ruleset reaches the program as descriptor 3 and is closed
		// before the program's first instruction.
		{"holds no descriptor beyond its stdio", "readlink /proc/$$/fd/3 || echo none", "none\n", "", 0},
		{"has no_new_privs", "grep '^NoNewPrivs:' /proc/self/status | tr -d ' \t'", "NoNewPrivs:1\n", "", 0},
		{"a user namespace of its own", "readlink /proc/self/ns/user", "", "", 0},
		{"another user namespace of its own", "readlink /proc/self/ns/user", "", "", 0},
	}
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{own: true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, end := runSh(t, z, c.script)
			if end.ExitCode() != c.code || !strings.Contains(stderr, c.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", end.ExitCode(), stderr, c.code, c.wantErr)
			}
			if strings.Contains(c.name, "user namespace of its own") {
				if seen[out] {
					t.Fatalf("user namespace %q shared", out)
				}
				seen[out] = true
				return
			}
			if out != c.wantOut {
				t.Fatalf("stdout %q, want %q", out, c.wantOut)
			}
		})
	}
}

// A program outside the grants does not run, and says why, whether the
// zygote holds it at its exec (where mayExec refuses it before the fork)
// or starts it through the helper (where Landlock refuses the exec).
func TestZygoteRefusesAProgramOutsideItsGrants(t *testing.T) {
	for _, denyPtrace := range []string{"", "1"} {
		t.Run("ptrace denied "+denyPtrace, func(t *testing.T) {
			t.Setenv(denyPtraceEnv, denyPtrace)
			z := zygoteFor(t, &Policy{}) // /bin/sh and its libraries, not /bin/true
			run, end, stderr := runForStderr(t, z, "/bin/true")
			// Through the helper (ptrace denied) the helper ran, as the
			// program's pid, and its exec was refused.
			if (run.Pid != 0) != (denyPtrace != "") || end.ExitCode() != ExitExecDenied || !strings.Contains(string(stderr), "exec /bin/true") {
				t.Fatalf("pid %d, exit %d, stderr %q; want no program, exit %d", run.Pid, end.ExitCode(), stderr, ExitExecDenied)
			}
		})
	}
}

// runForStderr starts argv through z and waits for it: what the zygote
// did (the program's pid, 0 when none started), how it ended, and what
// it wrote to stderr.
func runForStderr(t *testing.T, z *Zygote, argv ...string) (*Run, *Exit, []byte) {
	t.Helper()
	errR, errW, _ := os.Pipe()
	run, err := z.Start(argv, nil, nil, os.Stdout, errW)
	errW.Close()
	if err != nil {
		t.Fatal(err)
	}
	stderr, _ := io.ReadAll(errR)
	end, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return run, end, stderr
}

// Where ptrace is forbidden (simulated: the zygote runs under a seccomp
// filter that denies ptrace, as kernel.yama.ptrace_scope=3 or a
// container's profile would), programs still run confined: the same
// reads denied, user, user namespaces and limits, through the helper per
// call. The programs inherit the filter, which shows it was in force.
func TestZygoteWithoutPtrace(t *testing.T) {
	t.Setenv(denyPtraceEnv, "1")
	z := zygoteFor(t, &Policy{Read: []string{"/usr", "/proc"}, Limits: Limits{Processes: 8, CPUSeconds: 7, Files: 32}})
	out, _, end := runSh(t, z, "grep '^Seccomp:' /proc/self/status")
	if end.ExitCode() != 0 || strings.Fields(out + " ")[len(strings.Fields(out+" "))-1] != "2" {
		t.Fatalf("the program ran without the ptrace-denying filter: exit %d, %q", end.ExitCode(), out)
	}
	z.mu.Lock()
	zygotePid := z.cur.cmd.Process.Pid
	z.mu.Unlock()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(zygotePid) + "/status")
	if err != nil || !strings.Contains(string(status), "Seccomp:\t2") {
		t.Fatalf("the zygote runs without the filter (%v)", err)
	}
	checkConfinement(t, z)
}

// An idle zygote exits after its idle period, and the next program
// starts it again; while a program runs, it is kept however many idle
// periods pass. Zygotes are counted as this process's children whose
// command line holds this test's spec.
func TestZygoteRetiresWhenIdle(t *testing.T) {
	grant := testutil.OpenDir(t, "zygote-idle")
	self := reachableSelf(t)
	if s := ProbeHelpers(t.Context(), []string{self}); s.Problem != "" {
		t.Fatalf("this host cannot run sandboxed programs: %s", s.Problem)
	}
	pl, err := Prepare(&Policy{Read: []string{"/usr", grant}}, "/bin/sh", self)
	if err != nil {
		t.Fatal(err)
	}
	z := NewZygote(pl, time.Second, time.Millisecond)
	t.Cleanup(func() { _ = z.Close() })
	count := func() int { return len(zygotesHolding(t, grant)) }
	if n := count(); n != 0 {
		t.Fatalf("%d zygotes before the first program", n)
	}
	for round := range 2 {
		if out, _, end := runSh(t, z, "echo hi"); end.ExitCode() != 0 || out != "hi\n" {
			t.Fatalf("round %d: exit %d, %q", round, end.ExitCode(), out)
		}
		testutil.WaitFor(t, "the idle zygote to exit", func() bool { return count() == 0 })
	}
	background(t, z, "echo up; sleep 60")
	running := zygotesHolding(t, grant)
	for i := range 20 {
		if out, _, end := runSh(t, z, "echo busy"); end.ExitCode() != 0 || out != "busy\n" {
			t.Fatalf("call %d beside a running program: exit %d, %q", i, end.ExitCode(), out)
		}
	}
	if now := zygotesHolding(t, grant); len(running) != 1 || !slices.Equal(now, running) {
		t.Fatalf("zygotes %v while a program ran, then %v: retired while busy", running, now)
	}
}

// zygotesHolding are the pids of this process's children that are
// zygotes and whose command line holds marker.
func zygotesHolding(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) &&
			bytes.Contains(cmdline, []byte(zygoteFlag)) && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// background starts `sh -c script` through z and returns once it printed
// its first line (which it returns); the test's end kills its group.
func background(t *testing.T, z *Zygote, script string) string {
	t.Helper()
	outR, outW, _ := os.Pipe()
	devNull, _ := os.Open(os.DevNull)
	defer devNull.Close()
	run, err := z.Start([]string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin"}, devNull, outW, outW)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-run.Pid, syscall.SIGKILL)
		_, _ = run.Wait()
		outR.Close()
	})
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	return strings.TrimSpace(line)
}

// Programs of the same binding running at once are kept apart as
// separate helpers kept them: each counts only its own processes against
// the process limit, and (Landlock ABI 6) one cannot signal the other.
func TestZygoteKeepsConcurrentProgramsApart(t *testing.T) {
	z := zygoteFor(t, &Policy{Read: []string{"/usr"}, Limits: Limits{Processes: 8}})
	first := background(t, z, "for i in 1 2 3 4 5; do sleep 60 & done; echo $$; wait")
	out, stderr, end := runSh(t, z, "for i in 1 2 3 4 5; do sleep 0 & done; wait; echo forked")
	if end.ExitCode() != 0 || out != "forked\n" {
		t.Fatalf("a second program's forks failed while the first held its processes: exit %d, %q %q", end.ExitCode(), out, stderr)
	}
	if abi, _ := landlockABI(); abi < 6 {
		t.Skipf("Landlock ABI %d has no signal scoping", abi)
	}
	_, stderr, end = runSh(t, z, "kill -0 "+first)
	if end.ExitCode() == 0 || !strings.Contains(strings.ToLower(stderr), "not permitted") {
		t.Fatalf("a program could signal another call's program: exit %d, %q", end.ExitCode(), stderr)
	}
}

// A zygote that dies takes its running programs with it (their
// parent-death signal; what they forked is the worker's to sweep, by
// group, when Wait fails), and the next program starts a new one.
func TestZygoteRestartsWhenItDies(t *testing.T) {
	z := zygoteFor(t, &Policy{Read: []string{"/usr"}})
	pid, err := strconv.Atoi(background(t, z, "echo $$; sleep 60"))
	if err != nil {
		t.Fatal(err)
	}
	z.mu.Lock()
	first := z.cur
	z.mu.Unlock()
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	testutil.WaitFor(t, "the dead zygote's program to be gone", func() bool { return !testutil.ProcAlive(pid) })
	out, _, end := runSh(t, z, "echo again")
	if end.ExitCode() != 0 || out != "again\n" {
		t.Fatalf("after the zygote died: exit %d, %q", end.ExitCode(), out)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cur == first || z.cur == nil {
		t.Fatal("no new zygote")
	}
}

// Requests and replies between the worker and the zygote read back as
// written, empty strings and all; broken ones are refused.
func TestZygoteWire(t *testing.T) {
	requests := []zygoteRequest{
		{Argv: []string{"/bin/true"}, Env: []string{}},
		{Argv: []string{"/bin/echo", "", "a b", "ü\n"}, Env: []string{"PATH=/bin", ""}},
	}
	for _, want := range requests {
		b, err := encodeRequest(want.Argv, want.Env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRequest(b)
		if err != nil || !slices.Equal(got.Argv, want.Argv) || !slices.Equal(got.Env, want.Env) {
			t.Fatalf("%q read back as %q, %v", b, got, err)
		}
		got, err = readFollowingRequest(strings.NewReader(strconv.Itoa(len(b)) + "\n" + string(b)))
		if err != nil || !slices.Equal(got.Argv, want.Argv) {
			t.Fatalf("following %q read back as %q, %v", b, got, err)
		}
	}
	if _, err := encodeRequest([]string{"a\x00b"}, nil); err == nil {
		t.Error("a NUL byte in an argument was encoded")
	}
	for _, bad := range []string{"", "1", "0\x00", "2\x00a\x00", "x\x00a\x00"} {
		if r, err := decodeRequest([]byte(bad)); err == nil {
			t.Errorf("%q decoded as %q", bad, r)
		}
	}
	replies := []zygoteReply{{Pid: 42}, {Ended: true, Status: 256, CPUNs: 12345}, {Ended: true}}
	for _, want := range replies {
		if got, err := parseReply(string(want.line())); err != nil || got != want {
			t.Errorf("%q read back as %+v, %v", want.line(), got, err)
		}
	}
	for _, bad := range []string{"", "p", "p 0", "p x", "e 1", "e -1 0", "q 1\n"} {
		if r, err := parseReply(bad); err == nil {
			t.Errorf("%q parsed as %+v", bad, r)
		}
	}
}

// A request larger than a control message carries follows on the call's
// socket and runs the same.
func TestZygoteTakesALargeRequest(t *testing.T) {
	z := zygoteFor(t, &Policy{Read: []string{"/usr"}})
	script := ": " + strings.Repeat("x", inlineRequestMax) + "; echo done"
	if out, stderr, end := runSh(t, z, script); end.ExitCode() != 0 || out != "done\n" {
		t.Fatalf("exit %d, %q %q", end.ExitCode(), out, stderr)
	}
	// A host with small socket buffers: a request under inlineRequestMax
	// that the control socket refuses (EMSGSIZE) follows on the call's
	// socket too, and the zygote is kept.
	z.mu.Lock()
	zp := z.cur
	rc, err := zp.ctl.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 1024)
		})
	}
	z.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	script = ": " + strings.Repeat("x", inlineRequestMax-1024) + "; echo small buffers"
	if out, stderr, end := runSh(t, z, script); end.ExitCode() != 0 || out != "small buffers\n" {
		t.Fatalf("small buffers: exit %d, %q %q", end.ExitCode(), out, stderr)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.cur != zp {
		t.Fatal("the zygote was replaced after a request too large for its socket")
	}
}
