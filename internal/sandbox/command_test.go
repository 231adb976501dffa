//go:build linux

package sandbox

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// planFor is a Plan for /bin/sh under p, with the test binary as its
// helper (TestMain calls Main).
func planFor(t testing.TB, p *Policy) *Plan {
	t.Helper()
	self := reachableSelf(t)
	if s := ProbeHelpers(t.Context(), []string{self}); s.Problem != "" {
		t.Fatalf("this host cannot run sandboxed programs: %s", s.Problem)
	}
	pl, err := Prepare(p, "/bin/sh", self)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// reachableSelf is the test binary, copied where nobody (a root worker's
// confined programs' user) can run it when the test runs as root.
func reachableSelf(t testing.TB) string {
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
	dir := testutil.OpenDir(t, "sandbox-test")
	path := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts the plan's program with args, its stdout and stderr
// returned as readers.
func start(t testing.TB, pl *Plan, args ...string) (*Command, io.ReadCloser, io.ReadCloser) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	c := launch(t, pl, args, func(cmd *exec.Cmd) []*os.File {
		cmd.Stdout, cmd.Stderr = outW, errW
		return []*os.File{outW, errW}
	})
	return c, outR, errR
}

// launch starts the plan's program with args, its standard files as set
// sets them; the files set returns, the program's ends of its pipes, are
// closed here once it started.
func launch(t testing.TB, pl *Plan, args []string, set func(*exec.Cmd) []*os.File) *Command {
	t.Helper()
	c, err := pl.Command(args, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := set(c.Cmd)
	err = c.Cmd.Start()
	c.Started()
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runSh runs `sh -c script` under pl and returns its stdout, stderr and end.
func runSh(t testing.TB, pl *Plan, script string) (string, string, *Exit) {
	t.Helper()
	c, outR, errR := start(t, pl, "-c", script)
	stdout, _ := io.ReadAll(outR)
	stderr, _ := io.ReadAll(errR)
	end, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(stdout), string(stderr), end
}

// Each program is confined: its reads outside the grants fail, it runs as
// the worker's user in a user namespace of its own, with the limits set
// and no_new_privs, holding no descriptor beyond its stdio, and two runs
// in a row each get a fresh process count.
func TestCommandConfinesEachProgram(t *testing.T) {
	pl := planFor(t, &Policy{Read: []string{"/usr", "/proc"}, Limits: Limits{Processes: 8, CPUSeconds: 7, Files: 32}})
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
		{"read outside its grants", "cat /etc/hostname", "", "/etc/hostname", 1},
		{"runs as the worker's user", "id -u", uid + "\n", "", 0},
		{"limits set", "grep -E '^Max (cpu time|processes|open files)' /proc/self/limits | tr -s ' '",
			"Max cpu time 7 8 seconds \nMax processes 8 8 processes \nMax open files 32 32 files \n", "", 0},
		{"holds no descriptor beyond its stdio", "readlink /proc/$$/fd/3 || echo none", "none\n", "", 0},
		{"has no_new_privs", "grep '^NoNewPrivs:' /proc/self/status | tr -d ' \t'", "NoNewPrivs:1\n", "", 0},
		{"has no capability", "grep '^CapEff:' /proc/self/status | tr -d ' \t'", "CapEff:0000000000000000\n", "", 0},
		{"has the environment it was given", "env | grep -v '^PWD='", "PATH=/usr/bin:/bin\n", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, end := runSh(t, pl, c.script)
			if end.ExitCode() != c.code || !strings.Contains(stderr, c.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", end.ExitCode(), stderr, c.code, c.wantErr)
			}
			if out != c.wantOut {
				t.Fatalf("stdout %q, want %q", out, c.wantOut)
			}
		})
	}
	t.Run("a user namespace of its own", func(t *testing.T) { userNamespacesOfTheirOwn(t, pl) })
	t.Run("keeps a GOMAXPROCS of its own", func(t *testing.T) {
		c, err := pl.Command([]string{"-c", "env | grep GOMAXPROCS"}, []string{"PATH=/usr/bin:/bin", "GOMAXPROCS=3"})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		c.Cmd.Stdout = &out
		err = c.Cmd.Start()
		c.Started()
		if err != nil {
			t.Fatal(err)
		}
		if end, err := c.Wait(); err != nil || end.Status != 0 || out.String() != "GOMAXPROCS=3\n" {
			t.Fatalf("stdout %q, end %v %v", out.String(), end, err)
		}
	})
}

// userNamespacesOfTheirOwn runs two programs at once, each printing its
// user namespace and then waiting for its stdin to close: both namespaces
// exist at the same time, so a namespace's number freed by an ended
// program and given to the next cannot pass for a shared one.
func userNamespacesOfTheirOwn(t *testing.T, pl *Plan) {
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{own + "\n": true}
	var ends []func()
	defer func() {
		for _, end := range ends {
			end()
		}
	}()
	for range 2 {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		c := launch(t, pl, []string{"-c", "readlink /proc/self/ns/user; cat"}, func(cmd *exec.Cmd) []*os.File {
			cmd.Stdin, cmd.Stdout = inR, outW
			return []*os.File{inR, outW}
		})
		ends = append(ends, func() { inW.Close(); _, _ = c.Wait(); outR.Close() })
		line, _ := bufio.NewReader(outR).ReadString('\n')
		if !strings.HasPrefix(line, "user:[") || seen[line] {
			t.Fatalf("user namespace %q shared or unread", line)
		}
		seen[line] = true
	}
}

// A program outside the grants does not run, and the helper says why.
func TestCommandRefusesAProgramOutsideItsGrants(t *testing.T) {
	pl := planFor(t, &Policy{}) // /bin/sh and its libraries, not /bin/true
	pl.Program = "/bin/true"
	c, outR, errR := start(t, pl)
	_, _ = io.ReadAll(outR)
	stderr, _ := io.ReadAll(errR)
	end, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if end.ExitCode() != ExitExecDenied && end.ExitCode() != ExitSetup || !strings.Contains(string(stderr), "exec /bin/true") {
		t.Fatalf("exit %d, stderr %q; want exit %d", end.ExitCode(), stderr, ExitExecDenied)
	}
}

// BenchmarkConfinedTrue runs /bin/true through the sandbox (the helper as
// init of its namespaces, the confiner, the exec); BenchmarkBwrapTrue runs
// it through bubblewrap confining it the way operators do, in the same
// run, for comparison.
func BenchmarkConfinedTrue(b *testing.B) {
	pl := planFor(b, &Policy{})
	pl.Program = "/bin/true"
	helper := pl.helper
	if h := os.Getenv("TOOLMESH_BENCH_HELPER"); h != "" {
		helper = h // a built toolmesh-sandbox, as workers run it
	}
	pl2, err := Prepare(&Policy{}, "/bin/true", helper)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := pl2.Command(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		err = c.Cmd.Start()
		c.Started()
		if err != nil {
			b.Fatal(err)
		}
		if end, err := c.Wait(); err != nil || end.Status != 0 {
			b.Fatalf("%v %v", end, err)
		}
	}
}

func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bwrap")
	}
	for b.Loop() {
		if out, err := exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "/bin/true").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
