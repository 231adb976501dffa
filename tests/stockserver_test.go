package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stockServer is the Debian nats-server running as a process of its own,
// so a test can kill it, restart it on the same port, or load a config
// exactly as an operator would.
type stockServer struct {
	bin, dir string
	args     []string
	url      string
	cmd      *exec.Cmd
}

// stockServerBin finds the stock nats-server; without one the test skips,
// unless TOOLMESH_REQUIRE_NATS_SERVER is set (CI sets it and installs it).
func stockServerBin(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/nats-server", "/usr/bin/nats-server"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if os.Getenv("TOOLMESH_REQUIRE_NATS_SERVER") != "" {
		t.Fatal("nats-server is not installed and TOOLMESH_REQUIRE_NATS_SERVER is set (apt-get install nats-server)")
	}
	t.Skip("nats-server is not installed (apt-get install nats-server); set TOOLMESH_REQUIRE_NATS_SERVER to fail instead")
	return ""
}

// startStockServer starts nats-server on a free port of 127.0.0.1 with
// extra args (a -c config, say) and returns it once it listens.
func startStockServer(t *testing.T, extra ...string) *stockServer {
	t.Helper()
	s := &stockServer{bin: stockServerBin(t), dir: t.TempDir()}
	s.args = append([]string{"-a", "127.0.0.1", "-p", "-1", "--ports_file_dir", s.dir}, extra...)
	s.start(t)
	t.Cleanup(func() { s.kill() })
	return s
}

var portsURL = regexp.MustCompile(`"nats://[^"]+"`)

// start runs the server and waits for its ports file.
func (s *stockServer) start(t *testing.T) {
	t.Helper()
	for _, old := range s.portsFiles() {
		_ = os.Remove(old)
	}
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nats-server's ports file", func() bool {
		for _, f := range s.portsFiles() {
			b, err := os.ReadFile(f)
			if m := portsURL.Find(b); err == nil && m != nil {
				s.url = strings.Trim(string(m), `"`)
				return true
			}
		}
		return false
	})
}

func (s *stockServer) portsFiles() []string {
	m, _ := filepath.Glob(filepath.Join(s.dir, "*.ports"))
	return m
}

// restart kills the server and starts it again on the same port.
func (s *stockServer) restart(t *testing.T) {
	t.Helper()
	s.kill()
	port := s.url[strings.LastIndexByte(s.url, ':')+1:]
	for i, a := range s.args {
		if a == "-p" {
			s.args[i+1] = port
		}
	}
	// The port may linger briefly after the old process exits; retry.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.start(t)
		if s.cmd.ProcessState == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nats-server did not restart on its port")
		}
	}
}

func (s *stockServer) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// stopProcess stops p (SIGSTOP) and waits until every thread of it is
// stopped: the signal is only queued when kill returns, and a busy host
// may let the process read and answer a message or two before it takes
// effect, which a test that sends calls "to a stopped worker" must rule out.
func stopProcess(t *testing.T, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every thread of the process to be stopped", func() bool {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", p.Pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		for _, f := range tasks {
			stat, err := os.ReadFile(f)
			if err != nil {
				return false
			}
			// The state follows the command name, which ends with ')'.
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
				return false
			}
		}
		return true
	})
}
