package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Policy is the `sandbox` block of a tools file: what a confined program
// may touch. Everything not granted is denied.
type Policy struct {
	// Read lists paths the program may read (and run programs from),
	// directories recursively.
	Read []string `json:"read,omitempty"`
	// Write lists paths the program may read, write, create and delete
	// in, directories recursively.
	Write []string `json:"write,omitempty"`
	// Network is "none" (the default), "any", or a list of "*:PORT"
	// entries: TCP connections to those ports only.
	Network Network `json:"network"`
	// Limits bound the program's resources; zero means no limit.
	Limits Limits `json:"limits,omitempty"`
}

// Limits are the resource limits of a confined program, each per program
// run (the program and everything it starts share the process count).
type Limits struct {
	// CPUSeconds is the CPU time of each process (RLIMIT_CPU): SIGXCPU
	// at the limit, SIGKILL a second later.
	CPUSeconds int `json:"cpu_seconds,omitempty"`
	// MemoryMB bounds each process's data memory (RLIMIT_DATA: heap and
	// private writable mappings), in MiB.
	MemoryMB int `json:"memory_mb,omitempty"`
	// Files bounds the open file descriptors of each process (RLIMIT_NOFILE).
	Files int `json:"files,omitempty"`
	// Processes bounds the processes and threads alive at once in the
	// run's own user namespace (RLIMIT_NPROC).
	Processes int `json:"processes,omitempty"`
}

// Network says where a confined program may connect.
type Network struct {
	// Any leaves the network as the worker has it.
	Any bool
	// Ports are the TCP ports the program may connect to, on any host;
	// with Any false and no Ports the program has no network at all.
	Ports []uint16
}

// None reports whether the program gets no network at all.
func (n Network) None() bool { return !n.Any && len(n.Ports) == 0 }

// MarshalJSON writes "none", "any" or the list of "*:PORT".
func (n Network) MarshalJSON() ([]byte, error) {
	switch {
	case n.Any:
		return []byte(`"any"`), nil
	case n.None():
		return []byte(`"none"`), nil
	}
	list := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		list[i] = "*:" + strconv.Itoa(int(p))
	}
	return json.Marshal(list)
}

// UnmarshalJSON reads "none", "any" or a list of host:port entries. The
// host must be "*": Landlock restricts TCP ports, not addresses, so a
// named host would be a promise the kernel cannot keep.
func (n *Network) UnmarshalJSON(b []byte) error {
	var word string
	if json.Unmarshal(b, &word) == nil {
		switch word {
		case "none", "":
			*n = Network{}
		case "any":
			*n = Network{Any: true}
		default:
			return fmt.Errorf("network: unknown %q (want none, any, or a list of \"*:PORT\")", word)
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New(`network: want none, any, or a list of "*:PORT"`)
	}
	out := Network{}
	for _, e := range list {
		p, err := parsePortEntry(e)
		if err != nil {
			return err
		}
		out.Ports = append(out.Ports, p)
	}
	sort.Slice(out.Ports, func(i, j int) bool { return out.Ports[i] < out.Ports[j] })
	*n = out
	return nil
}

func parsePortEntry(e string) (uint16, error) {
	host, port, ok := strings.Cut(e, ":")
	if !ok {
		return 0, fmt.Errorf("network: %q: want \"*:PORT\"", e)
	}
	if host != "*" {
		return 0, fmt.Errorf("network: %q: Landlock restricts TCP ports, not hosts; write \"*:%s\" to allow that port on any host (the host part cannot be enforced)", e, port)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("network: %q: port must be 1-65535", e)
	}
	return uint16(n), nil
}

// Decode reads a `sandbox` block (JSON). The word "unconfined" decodes to
// a nil Policy with unconfined true: a tool's explicit opt-out of a file's
// default.
func Decode(raw json.RawMessage) (p *Policy, unconfined bool, err error) {
	var word string
	if json.Unmarshal(raw, &word) == nil {
		if word == "unconfined" {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("sandbox: unknown %q (want a block, or unconfined)", word)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var pol Policy
	if err := dec.Decode(&pol); err != nil {
		return nil, false, fmt.Errorf("sandbox: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := pol.Validate(); err != nil {
		return nil, false, err
	}
	return &pol, false, nil
}

// Validate checks that every path is absolute and clean and every limit
// non-negative.
func (p *Policy) Validate() error {
	for _, list := range []struct {
		field string
		paths []string
	}{{"read", p.Read}, {"write", p.Write}} {
		for _, path := range list.paths {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("sandbox.%s: %q is not an absolute path", list.field, path)
			}
		}
	}
	l := p.Limits
	if l.CPUSeconds < 0 || l.MemoryMB < 0 || l.Files < 0 || l.Processes < 0 {
		return errors.New("sandbox.limits: limits must not be negative")
	}
	return nil
}

// NetworkText says in a few words where the program may connect: none,
// any, or "tcp ports 443,8080".
func (n Network) NetworkText() string {
	switch {
	case n.Any:
		return "any"
	case n.None():
		return "none"
	}
	ports := make([]string, len(n.Ports))
	for i, port := range n.Ports {
		ports[i] = strconv.Itoa(int(port))
	}
	return "tcp ports " + strings.Join(ports, ",")
}
