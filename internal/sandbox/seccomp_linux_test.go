//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyPtraceEnv, set, makes the test binary deny itself ptrace before it
// serves as a helper (see denyPtraceIfAsked).
const denyPtraceEnv = "TOOLMESH_TEST_DENY_PTRACE"

// denyPtraceIfAsked installs, when denyPtraceEnv is set, a seccomp filter
// on every thread of this process that fails ptrace with EPERM, as a host
// with kernel.yama.ptrace_scope=3 or a container's seccomp profile does;
// what this process starts inherits it.
func denyPtraceIfAsked() {
	if os.Getenv(denyPtraceEnv) == "" {
		return
	}
	if err := denyPtrace(); err != nil {
		fmt.Fprintf(os.Stderr, "deny ptrace: %v\n", err)
		os.Exit(3)
	}
}

// auditArch is this architecture's seccomp audit value.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("no seccomp audit value for %s", runtime.GOARCH)
}

func denyPtrace() error {
	arch, err := auditArch()
	if err != nil {
		return err
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	filter := []unix.SockFilter{
		{Code: ld, K: 4}, // seccomp_data.arch
		{Code: jeq, K: arch, Jt: 0, Jf: 3},
		{Code: ld, K: 0}, // seccomp_data.nr
		{Code: jeq, K: unix.SYS_PTRACE, Jt: 0, Jf: 1},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %v", errno)
	}
	return nil
}
