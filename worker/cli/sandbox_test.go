package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/sandbox"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
)

// sandboxed loads a one-tool tools file and makes its Handler with the
// test's sandbox helper (skipping only where the kernel cannot confine).
func sandboxed(t testing.TB, yaml string) *toolHandler {
	t.Helper()
	support := sandbox.ProbeHelpers(context.Background(), []string{sandboxHelper})
	if support.Problem != "" {
		t.Fatalf("this host cannot run sandboxed programs: %s", support.Problem)
	}
	f, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(f.tools[0], nil, meshtest.Quiet(), &support)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// openDir is a new directory anyone may enter (read-only for others, or
// writable with write): a root worker's confined programs run as nobody,
// and t.TempDir's parent is private.
func openDir(t *testing.T, write bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandbox-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mode := os.FileMode(0o755)
	if write {
		mode = 0o777
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// python3Stdlib is where the system python3 keeps its standard library.
func python3Stdlib(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestSandboxDeniesReadsOutsideItsGrants(t *testing.T) {
	dir := openDir(t, false)
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("granted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {path: {type: string}}}
    sandbox: {read: [`+dir+`]}
    binding: {cli: {cmd: cat, args_template: "{arg.path}", output_format: lines}}
`)
	res, err, _ := call(t, h, `{"path":"`+dir+`/ok.txt"}`)
	if err != nil || !strings.Contains(resultJSON(t, res), "granted") {
		t.Fatalf("a granted file: %v %v", res, err)
	}
	for _, path := range []string{"/etc/hostname", "/proc/self/stat", filepath.Dir(dir) + "/"} {
		_, err, _ = call(t, h, `{"path":"`+path+`"}`)
		p := wantProblem(t, err, envelope.CodeSandboxReadDenied)
		if p.Extensions["path"] != path || p.Extensions["sandbox_rule"] != "read" || p.Extensions["attribution"] != "stderr" {
			t.Errorf("%s: extensions %v", path, p.Extensions)
		}
	}
}

func TestSandboxDeniesWritesOutsideItsGrants(t *testing.T) {
	out, elsewhere := openDir(t, true), openDir(t, true)
	h := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {path: {type: string}}}
    sandbox: {write: [`+out+`]}
    binding: {cli: {cmd: sh, args: ["-c", 'echo written > "$0"'], args_template: "{arg.path}", output_format: lines}}
`)
	if _, err, _ := call(t, h, `{"path":"`+out+`/f"}`); err != nil {
		t.Fatalf("a granted directory: %v", err)
	}
	escape := filepath.Join(os.TempDir(), "sandbox-escape-"+filepath.Base(elsewhere))
	t.Cleanup(func() { os.Remove(escape) })
	for _, path := range []string{elsewhere + "/f", escape} {
		_, err, _ := call(t, h, `{"path":"`+path+`"}`)
		p := wantProblem(t, err, envelope.CodeSandboxWriteDenied)
		if p.Extensions["path"] != path {
			t.Errorf("path %v, want %s", p.Extensions["path"], path)
		}
	}
	for _, path := range []string{elsewhere + "/f", escape} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("the refused write of %s happened: %v", path, err)
		}
	}
}

// With network none the program cannot reach a listener on loopback: not
// with python3's socket module, not with curl (which names the address).
func TestSandboxNetworkNoneRefusesLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	stdlib := python3Stdlib(t)
	py := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {port: {type: integer}}}
    sandbox: {read: [`+stdlib+`], network: none}
    binding: {cli: {cmd: /usr/bin/python3, args: ["-c", "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5); print(1)"], args_template: "{arg.port}"}}
`)
	_, err, _ = call(t, py, `{"port":`+strconv.Itoa(port)+`}`)
	wantProblem(t, err, envelope.CodeSandboxConnectDenied)
	if _, err := exec.LookPath("curl"); err == nil {
		curl := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {url: {type: string}}}
    sandbox: {network: none}
    binding: {cli: {cmd: curl, args: ["-sS"], args_template: "{arg.url}"}}
`)
		_, err, _ = call(t, curl, `{"url":"http://127.0.0.1:`+strconv.Itoa(port)+`/"}`)
		p := wantProblem(t, err, envelope.CodeSandboxConnectDenied)
		if p.Extensions["address"] != "127.0.0.1:"+strconv.Itoa(port) {
			t.Errorf("address %v, want 127.0.0.1:%d (stderr %v)", p.Extensions["address"], port, p.Extensions["stderr_tail"])
		}
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("a sandboxed program reached the loopback listener")
	}
}

// A fork bomb, a CPU burner and a memory hog are each stopped by their
// limit with its Problem, and the same Handler then serves a plain call.
func TestSandboxLimitsStopRunawayPrograms(t *testing.T) {
	stdlib := python3Stdlib(t)
	h := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {prog: {type: string}, code: {type: string}}}
    timeout: 60s
    sandbox:
      read: [/usr/bin, /bin, /usr/lib, /lib, `+stdlib+`]
      limits: {cpu_seconds: 1, memory_mb: 64, processes: 16, files: 16}
    binding: {cli: {cmd: env, args_template: "{arg.prog} -c {arg.code}", output_format: lines}}
`)
	cases := []struct {
		name, prog, code, limit, attribution string
	}{
		{"fork bomb", "sh", "while :; do sleep 1000 & done", "processes", "stderr"},
		{"cpu burner", "sh", "while :; do :; done", "cpu_seconds", "signal"},
		{"memory hog", "python3", "x = bytearray(1 << 30)", "memory_mb", "stderr"},
		{"file hoarder", "python3", "fs = [open('/dev/null') for _ in range(100)]", "files", "stderr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err, _ := call(t, h, `{"prog":"`+c.prog+`","code":"`+c.code+`"}`)
			p := wantProblem(t, err, envelope.CodeSandboxLimit)
			if p.Extensions["limit"] != c.limit || p.Extensions["attribution"] != c.attribution {
				t.Errorf("limit %v by %v, want %s by %s (stderr %v)", p.Extensions["limit"], p.Extensions["attribution"], c.limit, c.attribution, p.Extensions["stderr_tail"])
			}
			res, err, _ := call(t, h, `{"prog":"sh","code":"echo next"}`)
			if err != nil || !strings.Contains(resultJSON(t, res), "next") {
				t.Fatalf("the next call: %v %v", res, err)
			}
		})
	}
}

// goOutOfMemory matches the Go runtime's own words for running out of
// memory, which depend on where the allocation failed: "fatal error:
// runtime: out of memory" on the heap, "fatal error: out of memory
// allocating heap arena metadata" when the arena index could not grow.
var goOutOfMemory = regexp.MustCompile(`fatal error: (runtime: )?out of memory`)

// A Go program that runs out of memory under memory_mb ends with exit 2,
// "fatal error: runtime: out of memory" first on its stderr and then more
// goroutine stacks than the stderr tail holds: it is still named a
// memory_mb limit. A program that crashes on its own under the same limit
// (SIGSEGV, nothing said) stays the tool's failure.
func TestSandboxNamesAMemoryLimitARuntimeReportsFirst(t *testing.T) {
	h := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {prog: {type: string}}}
    timeout: 60s
    sandbox:
      read: [/usr/bin, /bin, /usr/lib, /lib, `+filepath.Dir(memhog)+`]
      limits: {memory_mb: 64}
    binding: {cli: {cmd: env, args_template: "{arg.prog}", output_format: lines}}
`)
	_, err, _ := call(t, h, `{"prog":"`+memhog+`"}`)
	p := wantProblem(t, err, envelope.CodeSandboxLimit)
	tail, _ := p.Extensions["stderr_tail"].(string)
	if strings.Contains(tail, "out of memory") {
		t.Fatalf("the stderr tail holds the runtime's cause, so this does not test reading past it: %q", tail)
	}
	if p.Extensions["limit"] != "memory_mb" || p.Extensions["limit_value"] != 64 || p.Extensions["attribution"] != sandbox.ByStderr ||
		!goOutOfMemory.MatchString(fmt.Sprint(p.Extensions["evidence"])) {
		t.Fatalf("limit %v=%v by %v on %q", p.Extensions["limit"], p.Extensions["limit_value"], p.Extensions["attribution"], p.Extensions["evidence"])
	}
	crash := sandboxed(t, `
tools:
  - name: t
    sandbox: {read: [/usr/bin, /bin, /usr/lib, /lib], limits: {memory_mb: 64}}
    binding: {cli: {cmd: sh, args: ["-c", "kill -SEGV $$"]}}
`)
	_, err, _ = call(t, crash, `{}`)
	wantProblem(t, err, envelope.CodeToolFailed)
}

// The binding's argument rules refuse option-looking values and paths
// leaving their root before the program starts (it would leave a mark).
func TestHardeningRefusesBeforeAnythingRuns(t *testing.T) {
	root, marks := t.TempDir(), t.TempDir()
	mark := filepath.Join(marks, "ran")
	if err := os.WriteFile(filepath.Join(root, "in.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(`
tools:
  - name: t
    input_schema: {type: object, properties: {path: {type: string}, n: {type: integer}}}
    binding:
      cli:
        cmd: sh
        args: ["-c", 'echo "$@" >> ` + mark + `', sh]
        args_template: "{arg.n} {arg.path}"
        output_format: lines
        end_of_options: true
        arg_rules: {path: {no_dash: true, under: ` + root + `}, n: {no_dash: true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := newProbedHandler(f.tools[0], nil, meshtest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, args := range []string{`{"path":"-rf"}`, `{"path":"--output=/etc/passwd"}`, `{"path":"../../etc/passwd"}`,
		`{"path":"escape/passwd"}`, `{"path":"/etc/passwd"}`, `{"n":-5,"path":"in.txt"}`} {
		_, err, _ := call(t, h, args)
		p := wantProblem(t, err, envelope.CodeInvalidInput)
		// The refusal names only what the caller sent: never the root,
		// nor where a symbolic link leads.
		if b, _ := json.Marshal(p); strings.Contains(string(b), root) || strings.Contains(string(b), "/etc\"") ||
			(!strings.Contains(args, "/etc") && strings.Contains(string(b), "/etc")) {
			t.Errorf("%s: the refusal shows host paths: %s", args, b)
		}
		if _, err := os.Stat(mark); !os.IsNotExist(err) {
			t.Fatalf("%s: the program ran before the refusal", args)
		}
	}
	if _, err, _ := call(t, h, `{"n":3,"path":"in.txt"}`); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(mark)
	if want := "-- 3 " + filepath.Join(root, "in.txt") + "\n"; string(got) != want {
		t.Errorf("argv %q, want %q (-- first, the path resolved)", got, want)
	}
}

// The file's sandbox is every tool's default; a tool's own block replaces
// it and the word unconfined opts out; mistakes are refused at load.
func TestToolsFileSandboxBlocks(t *testing.T) {
	f, err := Parse([]byte(`
sandbox: {read: [/usr/share], network: none, limits: {cpu_seconds: 5}}
tools:
  - {name: a, binding: {cli: {cmd: cat}}}
  - {name: b, sandbox: {write: [/tmp], network: ["*:443", "*:80"]}, binding: {cli: {cmd: cat}}}
  - {name: c, sandbox: unconfined, binding: {cli: {cmd: cat}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tl := range f.tools {
		b, _ := json.Marshal(tl.Sandbox)
		got[tl.Spec.Name] = string(b)
	}
	want := map[string]string{
		"a": `{"read":["/usr/share"],"network":"none","limits":{"cpu_seconds":5}}`,
		"b": `{"write":["/tmp"],"network":["*:80","*:443"],"limits":{}}`,
		"c": `null`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %s, want %s", name, got[name], w)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{`{read: [relative/dir]}`, "not an absolute path"},
		{`{network: ["example.com:443"]}`, "Landlock restricts TCP ports, not hosts"},
		{`{network: everything}`, `unknown "everything"`},
		{`{limits: {cpu_seconds: -1}}`, "must not be negative"},
		{`{limits: {memory: 5}}`, `unknown field "memory"`},
		{`{reads: [/tmp]}`, `unknown field "reads"`},
	} {
		_, err := Parse([]byte("tools:\n  - {name: x, sandbox: " + c.yaml + ", binding: {cli: {cmd: cat}}}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// Where the host cannot confine, a sandboxed tool is refused at load,
// unless the operator allowed running it unconfined (then it runs, and
// its spec says it is not confined).
func TestSandboxDegradesLoudly(t *testing.T) {
	f, err := Parse([]byte(`
tools:
  - {name: t, sandbox: {network: none}, binding: {cli: {cmd: echo, output_format: lines}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	none := &sandbox.Support{Problem: "the kernel has no Landlock"}
	_, err = newHandler(f.tools[0], nil, meshtest.Quiet(), none)
	p := wantProblem(t, err, envelope.CodeInvalidConfig)
	if !strings.Contains(p.Detail, "cannot enforce") || !strings.Contains(p.Detail, "no Landlock") {
		t.Errorf("detail %q", p.Detail)
	}
	tool := f.tools[0]
	tool.AllowUnconfined = true
	h, err := newHandler(tool, nil, meshtest.Quiet(), none)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Spec().Sandbox == nil || h.Spec().Sandbox.Confined {
		t.Errorf("an unconfined tool's spec says %+v", h.Spec().Sandbox)
	}
	if _, err, _ := call(t, h, `{}`); err != nil {
		t.Fatal(err)
	}
	old := &sandbox.Support{ABI: 3, Helper: sandboxHelper}
	g, err := Parse([]byte(`
tools:
  - {name: t, sandbox: {network: ["*:443"]}, binding: {cli: {cmd: echo}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newHandler(g.tools[0], nil, meshtest.Quiet(), old)
	if p := wantProblem(t, err, envelope.CodeInvalidConfig); !strings.Contains(p.Detail, "ABI 4") {
		t.Errorf("detail %q", p.Detail)
	}
}

// A confined tool's spec counts its grants and never names them.
func TestSandboxedSpecSummarises(t *testing.T) {
	dir := openDir(t, true)
	h := sandboxed(t, `
tools:
  - name: t
    sandbox: {read: [/usr/share, /etc/ssl], write: [`+dir+`], network: ["*:443"], limits: {memory_mb: 128}}
    binding: {cli: {cmd: echo}}
`)
	b, _ := json.Marshal(h.Spec().Sandbox)
	want := `{"confined":true,"read_paths":2,"write_paths":1,"network":"tcp ports 443","limits":{"memory_mb":128}}`
	if string(b) != want {
		t.Errorf("summary %s, want %s", b, want)
	}
}

// Lint names unconfined tools and values in option positions, and is
// quiet about what the binding protects.
func TestLintFindsOptionPositions(t *testing.T) {
	f, err := Parse([]byte(`
tools:
  - name: bare
    input_schema: {type: object, properties: {dst: {type: string}, f: {type: string}}}
    sandbox: {}
    binding: {cli: {cmd: cat, args_template: "{arg.dst} {arg.f?-f}"}}
  - name: guarded
    input_schema: {type: object, properties: {dst: {type: string}, n: {type: integer}}}
    sandbox: {}
    binding: {cli: {cmd: head, args_template: "-c {arg.n} --max={arg.n} {arg.dst}", end_of_options: true, arg_rules: {n: {no_dash: true}}}}
  - {name: open, binding: {cli: {cmd: cat}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Lint(f), "\n")
	for _, want := range []string{"bare: args_template token {arg.dst} puts a caller's value where the program reads options",
		"bare: args_template token {arg.f?-f}: the value of f follows -f", "open: no sandbox"} {
		if !strings.Contains(got, want) {
			t.Errorf("lint lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "guarded") {
		t.Errorf("lint warns about a guarded template:\n%s", got)
	}
}

// RegisterFile serves each tool's spec with its sandbox summary: an
// unconfined tool says so rather than nothing.
func TestRegisterFileServesTheSandboxSummary(t *testing.T) {
	srv := meshtest.StartServer(t, embedded.Config{})
	w := meshtest.NewWorker(t, meshtest.Connect(t, srv), worker.Config{})
	f, err := Parse([]byte("tools:\n  - {name: t, binding: {cli: {cmd: echo}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterFile(w, f, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}
	specs := w.Specs()
	if len(specs) != 1 || specs[0].Sandbox == nil || specs[0].Sandbox.Confined {
		t.Fatalf("specs %+v", specs)
	}
}

// A confined program is stopped as a plain one is: a cancel takes its
// whole sandbox down, a program ignoring SIGTERM gets SIGKILL after the
// grace, and a grandchild left behind by a program that exits is ended,
// as is one that detached with setsid and a double fork. The program
// runs in a PID namespace of its own, so the pid it writes is its own
// namespace's; the grandchild is found on the host by its marker.
func TestSandboxedProgramsStopWithTheirGroup(t *testing.T) {
	cases := []struct {
		name, script string
		cancel       bool
	}{
		{"cancel", `sleep 1000.1 & echo $! > "$0"; wait`, true},
		{"sigterm ignored", `trap "" TERM; sleep 1000.2 & echo $! > "$0"; wait; wait`, true},
		{"normal exit", `sleep 1000.3 & echo $! > "$0"; echo '{"ok":1}'`, false},
		{"setsid double fork", `setsid sh -c 'sleep 1000.4 & echo $! > "$0"' "$0" & wait; echo '{"ok":1}'`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := openDir(t, true)
			pidfile := filepath.Join(dir, "pid")
			marker := c.script[strings.Index(c.script, "1000."):][:6]
			h := sandboxed(t, `
tools:
  - name: t
    kill_grace: 100ms
    sandbox: {read: [/usr, /bin, /lib], write: [`+dir+`]}
    binding: {cli: {cmd: sh, args: ["-c", `+strconv.Quote(c.script)+`, `+strconv.Quote(pidfile)+`]}}
`)
			if !c.cancel {
				res, err, _ := call(t, h, `{}`)
				if err != nil || resultJSON(t, res) != `{"ok":1}` {
					t.Fatalf("%v %v", err, res)
				}
				b, _ := os.ReadFile(pidfile)
				if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == 0 {
					t.Fatal("no grandchild pid")
				}
				waitFor(t, "the grandchild to die", func() bool { return len(pidsRunning(t, marker)) == 0 })
				return
			}
			pid, err := runAndCancel(t, h, pidfile)
			if !errors.Is(err, context.Canceled) || pid == 0 {
				t.Fatalf("handler returned %v (grandchild %d)", err, pid)
			}
			waitFor(t, "the grandchild to die", func() bool { return len(pidsRunning(t, marker)) == 0 })
		})
	}
}

// pidsRunning are the host pids of live processes running `sleep marker`.
func pidsRunning(t *testing.T, marker string) []int {
	t.Helper()
	var pids []int
	for _, pid := range testutil.ProcPids(t) {
		if testutil.ProcCmdline(pid) == "sleep "+marker && testutil.ProcAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// With network none, a confined program cannot connect to a pathname unix
// socket outside its grants, though anyone may write to it (mode 777), nor
// to an abstract one: the pathname does not exist in its view, the
// abstract name not in its network namespace; the call's Problem says the
// sandbox refused the connection. A socket inside a write grant is reached.
func TestSandboxRefusesUnixSocketsOutsideItsGrants(t *testing.T) {
	outside, inside := openDir(t, true), openDir(t, true)
	var mu sync.Mutex
	var accepted []string
	listen := func(addr string) {
		ln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		if addr[0] == '/' {
			if err := os.Chmod(addr, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted = append(accepted, addr)
				mu.Unlock()
				_, _ = c.Write([]byte("host secret\n"))
				c.Close()
			}
		}()
	}
	outsideSock, insideSock := filepath.Join(outside, "s.sock"), filepath.Join(inside, "s.sock")
	abstract := "@toolmesh-test-" + filepath.Base(outside)
	for _, a := range []string{outsideSock, insideSock, abstract} {
		listen(a)
	}
	stdlib := python3Stdlib(t)
	h := sandboxed(t, `
tools:
  - name: t
    input_schema: {type: object, properties: {path: {type: string}}}
    sandbox: {read: [`+stdlib+`], write: [`+inside+`], network: none}
    binding: {cli: {cmd: /usr/bin/python3, args: ["-c", "`+
		`import socket,sys\np=sys.argv[1]\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect(p.replace('@','\\0',1))\nexcept OSError as e:\n  sys.exit(f'connect {p}: {e}')\nprint(s.recv(100).decode().strip())"], args_template: "{arg.path}", output_format: lines}}
`)
	for _, sock := range []string{outsideSock, abstract} {
		res, err, _ := call(t, h, `{"path":"`+sock+`"}`)
		p := wantProblem(t, err, envelope.CodeSandboxConnectDenied)
		if sock[0] == '/' && p.Extensions["address"] != "unix:"+sock {
			t.Errorf("%s: address %v (stderr %v)", sock, p.Extensions["address"], p.Extensions["stderr_tail"])
		}
		if res != nil {
			t.Errorf("%s: a result %v", sock, res)
		}
	}
	res, err, _ := call(t, h, `{"path":"`+insideSock+`"}`)
	if err != nil || !strings.Contains(resultJSON(t, res), "host secret") {
		t.Fatalf("a socket inside the write grant: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(accepted) != 1 || accepted[0] != insideSock {
		t.Fatalf("accepted %v, want only %s", accepted, insideSock)
	}
}
