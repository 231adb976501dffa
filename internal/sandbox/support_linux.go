//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Support is what this host offers a sandbox, as Probe found it.
type Support struct {
	// ABI is the kernel's Landlock ABI version (0: no Landlock).
	ABI int
	// Helper is the path of a working sandbox helper ("" when none).
	Helper string
	// Problem says why sandboxed programs cannot run here ("" when they can).
	Problem string
}

// Probe looks for a working helper and checks, by running it in the
// namespaces a sandbox gets, that the kernel gives a confined program
// what this package relies on: unprivileged user namespaces, PID, mount
// and network namespaces, a /proc of its own, and Landlock (ABI 1 for
// files, 4 for TCP ports).
func Probe(ctx context.Context) Support {
	return ProbeHelpers(ctx, helperCandidates())
}

// ProbeHelpers is Probe over the given helper candidates, in order: the
// first that works is the Support's helper.
func ProbeHelpers(ctx context.Context, candidates []string) Support {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var reasons []string
	for _, h := range candidates {
		if st, err := os.Stat(h); err != nil || st.IsDir() {
			continue
		}
		abi, err := probeHelper(ctx, h)
		var mismatch *wireMismatch
		if errors.As(err, &mismatch) {
			// A helper of another build is refused outright rather than
			// passed over for the next candidate: it is the one an
			// operator put beside the worker, and running beside it
			// unnoticed would hide a stale install.
			return Support{Problem: fmt.Sprintf("sandbox helper %s: %v", h, err)}
		}
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", h, err))
			continue
		}
		s := Support{ABI: abi, Helper: h}
		if abi < 1 {
			s.Problem = "the kernel has no Landlock (landlock_create_ruleset fails): Linux 5.13 or newer with lsm=landlock is needed"
		}
		return s
	}
	return Support{Problem: fmt.Sprintf("no working sandbox helper: build %s beside the worker (make build), or call sandbox.Main first in main (%s)",
		HelperName, strings.Join(reasons, "; "))}
}

func probeHelper(ctx context.Context, helper string) (int, error) {
	cmd := exec.CommandContext(ctx, helper, helperFlag, "--probe")
	cmd.SysProcAttr = namespaceAttr(true)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("probe in a new user and network namespace failed: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return parseProbe(strings.TrimSpace(out.String()))
}

// parseProbe reads a helper's probe answer: its Landlock ABI, once its
// wire version is this worker's.
func parseProbe(answer string) (int, error) {
	var abi, uid, wire int
	n, _ := fmt.Sscanf(answer, stderrPrefix+"ok abi=%d uid=%d wire=%d", &abi, &uid, &wire)
	switch {
	case n < 2:
		return 0, fmt.Errorf("not a sandbox helper (it answered %q)", answer)
	case n == 2:
		return 0, &wireMismatch{got: 1}
	case wire != wireVersion:
		return 0, &wireMismatch{got: wire}
	}
	return abi, nil
}

// wireMismatch is a helper from another build: it speaks wire version got.
type wireMismatch struct{ got int }

func (e *wireMismatch) Error() string {
	return fmt.Sprintf("it speaks sandbox wire version %d and this worker %d: the helper is from another build of toolmesh; "+
		"install toolmesh and %s from one build (make build puts them side by side)", e.got, wireVersion, HelperName)
}

// namespaceAttr starts the sandbox helper as its init: in a user
// namespace of its own (nothing it holds there reaches the host), where
// it is root, mapped to the worker's user (or nobody for a root worker,
// which is never mapped), with new PID, mount and IPC namespaces it may
// build the sandbox in, and with noNet an empty network namespace too
// (which also holds no abstract unix socket of the host).
func namespaceAttr(noNet bool) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC)
	if noNet {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = RootRunsAs, RootRunsAs
	}
	return &syscall.SysProcAttr{Cloneflags: flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}}
}

// SysProcAttr is the process attributes a confined program starts with
// (the caller adds its own process group and parent-death signal).
func (pl *Plan) SysProcAttr() *syscall.SysProcAttr {
	return namespaceAttr(pl.Policy.Network.None())
}

// Check says whether s can enforce the plan's policy; the error names
// what is missing.
func (s Support) Check(p *Policy) error {
	if s.Problem != "" {
		return fmt.Errorf("%s", s.Problem)
	}
	if len(p.Network.Ports) > 0 && s.ABI < 4 {
		return fmt.Errorf("network ports need Landlock ABI 4 (Linux 6.7), the kernel has ABI %d", s.ABI)
	}
	return nil
}
