//go:build linux && amd64

package sandbox

import (
	"fmt"
	"syscall"
)

// canInject says unshareInto works on this architecture.
const canInject = true

// i386Unshare is unshare's number for a 32-bit program (its code segment
// selector is i386CS).
const (
	i386Unshare = 310
	i386CS      = 0x23
)

// unshareInto makes the traced program pid, stopped at its exec, call
// unshare(CLONE_NEWUSER) itself before its first system call: at that
// call's entry the call is swapped for unshare, and once unshare returned
// the registers are put back one instruction earlier, so the program
// makes its own call afresh when it runs on. A vfork (which Go uses
// unless the child itself must unshare a user namespace) and this cost
// far less than the full fork Go makes otherwise.
func unshareInto(pid int) error {
	if err := toSyscallStop(pid); err != nil {
		return err
	}
	var saved syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace getregs: %v", err)
	}
	regs := saved
	regs.Orig_rax = syscall.SYS_UNSHARE
	if saved.Cs == i386CS {
		regs.Orig_rax = i386Unshare
	}
	regs.Rdi = syscall.CLONE_NEWUSER
	regs.Rbx = syscall.CLONE_NEWUSER // i386's first argument
	if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	if err := toSyscallStop(pid); err != nil {
		return err
	}
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return fmt.Errorf("ptrace getregs: %v", err)
	}
	if e := -int64(regs.Rax); e > 0 && e < 4096 {
		return fmt.Errorf("unshare(CLONE_NEWUSER): %v", syscall.Errno(e))
	}
	saved.Rip -= 2 // the syscall (or int 0x80) instruction, made again
	saved.Rax = saved.Orig_rax
	if err := syscall.PtraceSetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	return nil
}
