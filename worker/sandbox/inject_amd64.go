//go:build linux && amd64

package sandbox

import "syscall"

// i386Unshare is unshare's number for a 32-bit program (its code segment
// selector is i386CS).
const (
	i386Unshare = 310
	i386CS      = 0x23
)

// The system-call instructions: syscall, and int 0x80 for a 32-bit program.
var (
	amd64Syscall = []byte{0x0f, 0x05}
	i386Syscall  = []byte{0xcd, 0x80}
)

// programCounter is where the program stopped.
func programCounter(r *syscall.PtraceRegs) uintptr { return uintptr(r.Rip) }

// setSyscall sets r for unshare(flags) and returns the instruction that
// makes the call. orig_rax is cleared so that no system-call restart
// applies to the stop the program resumes from.
func setSyscall(r *syscall.PtraceRegs, flags uint64) ([]byte, error) {
	r.Orig_rax = ^uint64(0)
	if r.Cs == i386CS {
		r.Rax, r.Rbx = i386Unshare, flags
		return i386Syscall, nil
	}
	r.Rax, r.Rdi = syscall.SYS_UNSHARE, flags
	return amd64Syscall, nil
}

// syscallErrno is the injected call's error (0: it succeeded).
func syscallErrno(r *syscall.PtraceRegs) syscall.Errno {
	if e := -int64(r.Rax); e > 0 && e < 4096 {
		return syscall.Errno(e)
	}
	return 0
}
