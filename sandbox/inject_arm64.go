//go:build linux && arm64

package sandbox

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// arm64Svc is `svc #0`, little-endian.
var arm64Svc = []byte{0x01, 0x00, 0x00, 0xd4}

// pstateAArch32 marks a 32-bit (AArch32) program in pstate.
const pstateAArch32 = 0x10

// programCounter is where the program stopped.
func programCounter(r *syscall.PtraceRegs) uintptr { return uintptr(r.Pc) }

// setSyscall sets r for the call c (number in x8, arguments in x0, x1)
// and returns the instruction that makes it. A 32-bit program is refused:
// its registers and numbers differ, and the call then fails rather than
// run unconfined.
func setSyscall(r *syscall.PtraceRegs, c injectedCall) ([]byte, error) {
	if r.Pstate&pstateAArch32 != 0 {
		return nil, errors.New("sandbox: 32-bit (AArch32) programs are not supported on arm64")
	}
	r.Regs[8] = [...]uint64{callUnshare: unix.SYS_UNSHARE, callRestrictSelf: unix.SYS_LANDLOCK_RESTRICT_SELF, callClose: unix.SYS_CLOSE}[c.call]
	r.Regs[0], r.Regs[1] = c.arg0, c.arg1
	return arm64Svc, nil
}

// returnValue is what the injected call returned.
func returnValue(r *syscall.PtraceRegs) int64 { return int64(r.Regs[0]) }
