//go:build linux && amd64

package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The numbers of the injected system calls for a 32-bit program (its code
// segment selector is i386CS); Landlock's are the same on every
// architecture.
const (
	i386Close   = 6
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

// setSyscall sets r for the call c and returns the instruction that makes
// it. orig_rax is cleared so that no system-call restart applies to the
// stop the program resumes from.
func setSyscall(r *syscall.PtraceRegs, c injectedCall) ([]byte, error) {
	r.Orig_rax = ^uint64(0)
	if r.Cs == i386CS {
		r.Rax = [...]uint64{callUnshare: i386Unshare, callRestrictSelf: unix.SYS_LANDLOCK_RESTRICT_SELF, callClose: i386Close}[c.call]
		r.Rbx, r.Rcx = c.arg0, c.arg1
		return i386Syscall, nil
	}
	r.Rax = [...]uint64{callUnshare: unix.SYS_UNSHARE, callRestrictSelf: unix.SYS_LANDLOCK_RESTRICT_SELF, callClose: unix.SYS_CLOSE}[c.call]
	r.Rdi, r.Rsi = c.arg0, c.arg1
	return amd64Syscall, nil
}

// returnValue is what the injected call returned.
func returnValue(r *syscall.PtraceRegs) int64 { return int64(r.Rax) }
