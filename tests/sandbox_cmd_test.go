package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// sandboxBins builds toolmesh and toolmesh-sandbox side by side, as make
// build does, once, in a directory anyone may enter (a root worker's
// confined programs run as nobody, who must reach the helper), and
// returns the directory.
var sandboxBins = onceBuilt(func() (string, error) {
	dir, err := os.MkdirTemp("", "toolmesh-sandbox-bins")
	if err != nil {
		return "", err
	}
	for pkg, name := range map[string]string{"../cmd/toolmesh": "toolmesh", "../cmd/toolmesh-sandbox": "toolmesh-sandbox"} {
		if _, err := testutil.BuildInto(dir, pkg, name); err != nil {
			return "", err
		}
	}
	return dir, os.Chmod(dir, 0o755)
})

// The built binaries end to end: lint warns about an unconfined tool and
// a bare value in an option position; a worker (dev) runs the confined
// tool through the helper beside it; describe shows the summary; a read
// outside the grants exits with the sandbox Problem's exit code.
func TestCommandSandboxedTool(t *testing.T) {
	bin := filepath.Join(sandboxBins(t), "toolmesh")
	data, err := os.MkdirTemp("", "sandbox-data")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "a.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := writeTools(t, `
tools:
  - name: files.cat
    input_schema: {type: object, properties: {path: {type: string}}, required: [path]}
    sandbox: {read: [`+data+`], network: none, limits: {cpu_seconds: 5, processes: 4}}
    binding: {cli: {cmd: cat, args_template: "{arg.path}", output_format: lines}}
  - name: files.echo
    input_schema: {type: object, properties: {text: {type: string}}}
    binding: {cli: {cmd: echo, args_template: "{arg.text}", output_format: lines}}
`)
	lint := runBin(t, bin, "tools", "lint", tools)
	for _, want := range []string{"files.echo: no sandbox", "files.cat: args_template token {arg.path} puts a caller's value where the program reads options", "3 warnings"} {
		if !strings.Contains(lint.stdout, want) {
			t.Errorf("lint lacks %q:\n%s", want, lint.stdout)
		}
	}
	dev := startExec(t, bin, "dev", "--listen", "127.0.0.1:0", "--config", tools)
	url := dev.waitLine(t, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	desc := runBin(t, bin, "tools", "describe", "files.cat", "--server", url)
	if !strings.Contains(desc.stdout, "sandbox:     confined; reads 1 paths, writes 0; network none; cpu_seconds=5; processes=4") {
		t.Errorf("describe:\n%s%s", desc.stdout, desc.stderr)
	}
	if desc := runBin(t, bin, "tools", "describe", "files.echo", "--server", url); !strings.Contains(desc.stdout, "sandbox:     none: the program runs with the worker's own rights") {
		t.Errorf("describe of the unconfined tool:\n%s", desc.stdout)
	}
	ok := runBin(t, bin, "call", "files.cat", "--server", url, "--args", `{"path":"`+data+`/a.txt"}`)
	if ok.code != 0 || !strings.Contains(ok.stdout, "inside") {
		t.Fatalf("a granted read: %+v", ok)
	}
	denied := runBin(t, bin, "call", "files.cat", "--server", url, "--args", `{"path":"/etc/hostname"}`)
	if denied.code != 40 || !strings.Contains(denied.stderr, `"code":"sandbox_read_denied"`) || !strings.Contains(denied.stderr, `"path":"/etc/hostname"`) {
		t.Fatalf("a read outside the grants: %+v", denied)
	}
}

func runBin(t *testing.T, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}
