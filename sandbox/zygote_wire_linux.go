//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The worker and the zygote speak in the plainest form that carries a
// call, parsed without reflection (JSON cost the zygote about a tenth of a
// millisecond of CPU per call):
//
//   - a request is argc, then each argv string, then each environment
//     string, every one ended by a NUL byte (which no argument or variable
//     of execve can hold); when it follows on the call's socket it is
//     preceded by its length in decimal and a newline;
//   - a reply is a line: "p PID" once the program runs, "e STATUS CPU_NS"
//     at its end (the wait status and the CPU time in nanoseconds).

// encodeRequest is the request of argv and env.
func encodeRequest(argv, env []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(strconv.Itoa(len(argv)))
	b.WriteByte(0)
	for _, list := range [][]string{argv, env} {
		for _, s := range list {
			if strings.IndexByte(s, 0) >= 0 {
				return nil, fmt.Errorf("argument or variable %q holds a NUL byte", s)
			}
			b.WriteString(s)
			b.WriteByte(0)
		}
	}
	return b.Bytes(), nil
}

// decodeRequest reads a request made by encodeRequest.
func decodeRequest(b []byte) (zygoteRequest, error) {
	if len(b) == 0 || b[len(b)-1] != 0 {
		return zygoteRequest{}, errors.New("request not ended by NUL")
	}
	parts := strings.Split(string(b[:len(b)-1]), "\x00")
	argc, err := strconv.Atoi(parts[0])
	if err != nil || argc < 1 || argc > len(parts)-1 {
		return zygoteRequest{}, fmt.Errorf("bad argc %q", parts[0])
	}
	return zygoteRequest{Argv: parts[1 : 1+argc], Env: parts[1+argc:]}, nil
}

// readFollowingRequest reads a request that follows on the call's socket.
func readFollowingRequest(r io.Reader) (zygoteRequest, error) {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		return zygoteRequest{}, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 0 {
		return zygoteRequest{}, fmt.Errorf("bad request length %q", line)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return zygoteRequest{}, err
	}
	return decodeRequest(b)
}

// line is the reply's line.
func (r zygoteReply) line() []byte {
	if r.Ended {
		return fmt.Appendf(nil, "e %d %d\n", r.Status, r.CPUNs)
	}
	return fmt.Appendf(nil, "p %d\n", r.Pid)
}

// parseReply reads a reply's line.
func parseReply(line string) (zygoteReply, error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 2 && f[0] == "p":
		pid, err := strconv.Atoi(f[1])
		if err == nil && pid > 0 {
			return zygoteReply{Pid: pid}, nil
		}
	case len(f) == 3 && f[0] == "e":
		status, err1 := strconv.ParseUint(f[1], 10, 32)
		cpu, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			return zygoteReply{Ended: true, Status: uint32(status), CPUNs: cpu}, nil
		}
	}
	return zygoteReply{}, fmt.Errorf("zygote reply %q", line)
}
