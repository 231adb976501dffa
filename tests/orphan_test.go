package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// kill -9 of a `toolmesh worker` running a tool that forked a grandchild:
// nothing of the tool survives (the supervisor's parent-death signal takes
// the whole process group down within the kill grace).
func TestNoOrphansAfterWorkerKill9(t *testing.T) {
	srv, dir, p := workerOnTools(t, `worker ready`, func(dir string) string { return forkerTool(filepath.Join(dir, "pids")) })
	pidfile := filepath.Join(dir, "pids")
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = c.Call(ctx, "forker", nil) }()

	pids := forkedPids(t, pidfile)
	for _, pid := range pids {
		if !testutil.ProcAlive(pid) {
			t.Fatalf("pid %d is not running before the kill", pid)
		}
	}
	killAndWatch(t, p, pids)
}

// kill -9 of a `toolmesh worker` with eight calls running at once, half
// of them in programs that ignore SIGTERM: every program and grandchild
// is gone afterwards (the sentinel reads every live group from its table,
// TERMs them and KILLs what is left after the kill grace).
func TestNoOrphansOfManyCallsAfterWorkerKill9(t *testing.T) {
	srv, dir, p := workerOnTools(t, `worker ready`, func(string) string { return forkerTools("") })
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids := callForkers(ctx, t, c, dir, 8, func(pidfile string) []int { return forkedPids(t, pidfile) })
	killAndWatchAll(t, p, pids)
}

// kill -9 of a `toolmesh worker` with four sandboxed calls running, half
// of them in programs that ignore SIGTERM, each of which also left a
// setsid'd double fork behind: every program, grandchild and detached
// process is gone afterwards (each call's sandbox is a PID namespace whose
// init dies with the worker, and the kernel then ends all it holds). The
// programs write their pids as their PID namespace numbers them; the test
// watches the host's pids of those processes.
func TestNoOrphansOfSandboxedCallsAfterWorkerKill9(t *testing.T) {
	bin := filepath.Join(sandboxBins(t), "toolmesh")
	srv := meshtest.StartServer(t, embedded.Config{})
	dir, err := os.MkdirTemp("", "sandbox-orphans")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // a root worker's programs run as nobody
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tools.yaml")
	_ = os.WriteFile(cfg, []byte(forkerTools(fmt.Sprintf("sandbox: {read: [/usr, /bin, /lib], write: [%s]}", dir))), 0o644)
	p := startExec(t, bin, "worker", "--config", cfg, "--server", srv.ClientURL())
	p.waitLine(t, regexp.MustCompile(`worker ready`))
	c := meshtest.NewCaller(t, meshtest.Connect(t, srv), caller.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids := callForkers(ctx, t, c, dir, 4, func(pidfile string) []int { return sandboxedPids(t, pidfile) })
	killAndWatchAll(t, p, pids)
}

// forkerTool is a tools file of one tool, forker, that forks a long
// sleep and writes its own pid and the sleep's to pidfile.
func forkerTool(pidfile string) string {
	return fmt.Sprintf(`
tools:
  - name: forker
    kill_grace: 300ms
    binding:
      cli:
        cmd: sh
        args: ["-c", "sleep 1000 & echo $$ $! > %s.tmp && mv %s.tmp %s; wait"]
`, pidfile, pidfile, pidfile)
}

// forkerTools is a tools file of two tools, each forking a long sleep and
// writing both pids to the file its argument names: forker, and stubborn,
// which ignores SIGTERM. sandbox, when not empty, is each tool's sandbox
// block, and each program then also starts a detached process (setsid
// and a double fork: a sleep whose parent has exited, in a session of
// its own) and writes its pid third.
func forkerTools(sandbox string) string {
	script := `sleep 1000 & echo $$ $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`
	if sandbox != "" {
		script = `sleep 1000 & s=$!; setsid sh -c 'sleep 1000 & echo $! > "$0"' "$1.detached" & wait $!; ` +
			`echo $$ $s $(cat "$1.detached") > "$1.tmp" && mv "$1.tmp" "$1"; wait`
	}
	tool := func(name, prefix string) string {
		block := ""
		if sandbox != "" {
			block = "\n    " + sandbox
		}
		return fmt.Sprintf(`
  - name: %s
    kill_grace: 300ms
    input_schema: {type: object, properties: {file: {type: string}}, required: [file], additionalProperties: false}%s
    binding:
      cli:
        cmd: sh
        args: ["-c", %q, "forker"]
        args_template: "{arg.file}"
`, name, block, prefix+script)
	}
	return "tools:" + tool("forker", "") + tool("stubborn", "trap '' TERM; ")
}

// callForkers starts n calls of forkerTools' tools, alternating them, and
// returns the pids of every program and process it started, as pidsOf
// reads them from a call's pid file once they are running.
func callForkers(ctx context.Context, t *testing.T, c *caller.Caller, dir string, n int, pidsOf func(pidfile string) []int) []int {
	t.Helper()
	var pids []int
	for i := range n {
		name := []string{"forker", "stubborn"}[i%2]
		pidfile := filepath.Join(dir, fmt.Sprintf("pids-%d", i))
		go func() { _, _ = c.Call(ctx, name, map[string]any{"file": pidfile}) }()
		pids = append(pids, pidsOf(pidfile)...)
	}
	return pids
}

// sandboxedPids is the host pids of a sandboxed forker's program,
// grandchild and detached process, killed when t ends, once all run.
func sandboxedPids(t *testing.T, pidfile string) []int {
	t.Helper()
	host := hostPids(t, pidfile, readPids(t, pidfile, 3))
	t.Cleanup(func() {
		for _, pid := range host {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if cmd := testutil.ProcCmdline(host[0]); !strings.Contains(cmd, pidfile) {
		t.Fatalf("host pid %d of the program runs %q, not the program", host[0], cmd)
	}
	// A child's pid is known from its fork, before it execs sleep.
	waitFor(t, "the host pids to run the sleeps the program started", func() bool {
		return testutil.ProcCmdline(host[1]) == "sleep 1000" && testutil.ProcCmdline(host[2]) == "sleep 1000"
	})
	return host
}

// hostPids maps pids a sandboxed program wrote, which its own PID
// namespace numbered, to the host's: the namespace is that of the call's
// processes (those with marker, the program's argument, in their command
// line, in a PID namespace other than this test's), and in it a process's
// NSpid line of /proc/PID/status ends with the pid it knows itself by.
func hostPids(t *testing.T, marker string, nsPids []int) []int {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	var ns string
	for _, pid := range testutil.ProcPids(t) {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		if err == nil && link != self && slices.Contains(strings.Split(testutil.ProcCmdline(pid), " "), marker) {
			ns = link
			break
		}
	}
	if ns == "" {
		t.Fatalf("no process of the call with %s runs in a PID namespace of its own", marker)
	}
	host := make([]int, len(nsPids))
	for _, pid := range testutil.ProcPids(t) {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || link != ns {
			continue
		}
		if i := slices.Index(nsPids, innermostPid(pid)); i >= 0 {
			host[i] = pid
		}
	}
	for i, pid := range host {
		if pid == 0 {
			t.Fatalf("pid %d of the call's PID namespace %s runs nowhere", nsPids[i], ns)
		}
	}
	return host
}

// innermostPid is the pid the host's process pid has in its innermost PID
// namespace (the last field of its NSpid line), or 0.
func innermostPid(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// kill -9 of a `toolmesh worker` bridging a stdio MCP server that forked a
// grandchild: neither the server nor what it forked survives the worker.
func TestNoOrphansOfABridgedServerAfterWorkerKill9(t *testing.T) {
	_, dir, p := workerOnTools(t, `mcp server bridged`, func(dir string) string {
		pidfile := filepath.Join(dir, "pids")
		script := fmt.Sprintf("sleep 1001 & echo $$ $! > %s.tmp && mv %s.tmp %s; exec %s", pidfile, pidfile, pidfile, mcpServerBin(t))
		return fmt.Sprintf("tools:\n  - namespace: orphan\n    binding:\n      mcp: {command: sh, args: [-c, %q]}\n", script)
	})
	killAndWatch(t, p, forkedPids(t, filepath.Join(dir, "pids")))
}

// workerOnTools starts a server and `toolmesh worker` on the tools file
// tools writes for the test's directory dir, and waits until the worker's
// output says ready. The tests read /proc: elsewhere they are skipped.
func workerOnTools(t *testing.T, ready string, tools func(dir string) string) (*embedded.Server, string, *proc) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	srv := meshtest.StartServer(t, embedded.Config{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tools.yaml")
	_ = os.WriteFile(cfg, []byte(tools(dir)), 0o644)
	p := startProc(t, "worker", "--config", cfg, "--server", srv.ClientURL())
	p.waitLine(t, regexp.MustCompile(ready))
	return srv, dir, p
}

// forkedPids waits for the two pids (a program and the grandchild it
// forked) that the program writes to pidfile, and makes sure neither
// outlives the test, whatever its outcome.
func forkedPids(t *testing.T, pidfile string) []int {
	t.Helper()
	pids := readPids(t, pidfile, 2)
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pids
}

// readPids waits for the n pids a program writes to pidfile.
func readPids(t *testing.T, pidfile string, n int) []int {
	t.Helper()
	var pids []int
	waitFor(t, "the program and what it started to start", func() bool {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			return false
		}
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return len(pids) == n
	})
	return pids
}

// killAndWatch kills the worker process p with -9 and waits until none of
// pids runs any more.
func killAndWatch(t *testing.T, p *proc, pids []int) {
	t.Helper()
	killAndWatchAll(t, p, pids[:2])
}

// killAndWatchAll kills the worker process p with -9 and waits until
// none of pids runs any more.
func killAndWatchAll(t *testing.T, p *proc, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if !testutil.ProcAlive(pid) {
			t.Fatalf("pid %d is not running before the kill", pid)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	waitFor(t, "the programs and their grandchildren to be gone", func() bool {
		for _, pid := range pids {
			if testutil.ProcAlive(pid) {
				return false
			}
		}
		return true
	})
}
