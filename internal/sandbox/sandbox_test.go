package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	denyPtraceIfAsked() // a test simulates a host that forbids ptrace
	Main()
	os.Exit(m.Run())
}

// How stderr lines of real programs are attributed, against a policy
// that grants /usr/share and /tmp for reading and /var/tmp for writing.
func TestClassifyStderr(t *testing.T) {
	p := &Policy{Read: []string{"/usr/share", "/tmp"}, Write: []string{"/var/tmp"},
		Limits: Limits{MemoryMB: 64, Processes: 8, Files: 16}}
	cases := []struct {
		name, stderr, rule, path, limit string
	}{
		{"cat", "cat: /etc/hostname: Permission denied", RuleRead, "/etc/hostname", ""},
		{"program path first", "/usr/bin/cat: /etc/hostname: Permission denied", RuleRead, "/etc/hostname", ""},
		{"node", "EACCES: permission denied, open '/etc/hostname'", RuleRead, "/etc/hostname", ""},
		{"dash create", "sh: 1: cannot create /dev/shm/x-not-there: Permission denied", RuleWrite, "/dev/shm/x-not-there", ""},
		{"write into a read grant", "cp: cannot open '/tmp' for writing: Permission denied", RuleWrite, "/tmp", ""},
		{"file permissions, not the sandbox", "cat: /etc/shadow: Permission denied", "", "", ""},
		{"python connect", "  File \"/usr/lib/python3.11/socket.py\", line 836, in create_connection\n    sock.connect(sa)\nPermissionError: [Errno 13] Permission denied", RuleNetwork, "", ""},
		{"unreachable", "OSError: [Errno 101] Network is unreachable", RuleNetwork, "", ""},
		{"python memory", "MemoryError", RuleLimit, "", "memory_mb"},
		{"go memory", "fatal error: runtime: out of memory", RuleLimit, "", "memory_mb"},
		{"node memory", "FATAL ERROR: Committing semi space failed. Allocation failed - JavaScript heap out of memory", RuleLimit, "", "memory_mb"},
		{"perl memory", "Out of memory!", RuleLimit, "", "memory_mb"},
		{"sort memory", "sort: memory exhausted", RuleLimit, "", "memory_mb"},
		{"dash fork", "sh: 1: Cannot fork", RuleLimit, "", "processes"},
		{"bash fork", "bash: fork: retry: Resource temporarily unavailable", RuleLimit, "", "processes"},
		{"files", "OSError: [Errno 24] Too many open files: '/dev/null'", RuleLimit, "", "files"},
		{"own failure", "grep: nothing matched", "", "", ""},
		{"no such file", "cat: /no/such/dir/file: No such file or directory", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Classify(p, nil, c.stderr)
			if c.rule == "" {
				if d != nil {
					t.Fatalf("attributed %+v to the sandbox", d)
				}
				return
			}
			if d == nil || d.Rule != c.rule || d.Path != c.path || d.Limit != c.limit || d.Attribution != ByStderr {
				t.Fatalf("got %+v, want rule %s path %q limit %q by stderr", d, c.rule, c.path, c.limit)
			}
		})
	}
	if d := Classify(&Policy{Network: Network{Any: true}}, nil, "OSError: [Errno 101] Network is unreachable"); d != nil {
		t.Errorf("network any: attributed %+v", d)
	}
	if d := Classify(&Policy{}, nil, "MemoryError"); d != nil {
		t.Errorf("no memory limit: attributed %+v", d)
	}
}

func TestNetworkJSON(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{`"none"`, `"none"`}, {`"any"`, `"any"`}, {`["*:8080","*:443"]`, `["*:443","*:8080"]`}, {`[]`, `"none"`},
	} {
		var n Network
		if err := n.UnmarshalJSON([]byte(c.in)); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if b, _ := n.MarshalJSON(); string(b) != c.out {
			t.Errorf("%s: %s, want %s", c.in, b, c.out)
		}
	}
	for _, in := range []string{`"all"`, `["localhost:80"]`, `["*:0"]`, `["*:70000"]`, `[":80"]`, `5`} {
		var n Network
		if n.UnmarshalJSON([]byte(in)) == nil {
			t.Errorf("%s was accepted", in)
		}
	}
}

// A dynamically linked program gets its loader and libc; a script its
// interpreter.
func TestProgramFiles(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	files, err := programFiles(sh)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(files, " ")
	if !strings.Contains(joined, "libc.so") || !strings.Contains(joined, "ld-linux") {
		t.Errorf("sh: %v lacks libc or the loader", files)
	}
	script := t.TempDir() + "/s"
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err = programFiles(script)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := os.Readlink("/bin/sh")
	if !slices.ContainsFunc(files, func(f string) bool {
		return strings.HasSuffix(f, "/"+strings.TrimPrefix(real, "/")) || strings.HasSuffix(f, "/sh") || strings.HasSuffix(f, "/dash")
	}) {
		t.Errorf("script: %v lacks its interpreter", files)
	}
}

// The test binary serves as its own helper (TestMain calls Main): the
// probe finds Landlock in a fresh user and network namespace.
func TestProbeSelf(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		t.Skip("a root worker's programs run as nobody, who cannot reach the test binary's private directory")
	}
	s := ProbeHelpers(t.Context(), []string{self})
	if s.Problem != "" || s.ABI < 1 {
		t.Fatalf("%+v", s)
	}
}
