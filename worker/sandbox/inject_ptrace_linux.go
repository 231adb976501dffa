//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"syscall"
)

// canInject says unshareInto works on this architecture.
const canInject = true

// unshareInto makes the traced program pid, stopped at its exec before its
// first instruction, call unshare(CLONE_NEWUSER): the system-call
// instruction is written over the instruction at its program counter, the
// registers set for the call, and the program single-stepped over it (one
// stop); then the instruction and the registers are put back, so the
// program starts afresh where it would have. A vfork (which Go uses unless
// the child itself must unshare a user namespace) and this cost far less
// than the full fork Go makes otherwise.
func unshareInto(pid int) error {
	var saved syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace getregs: %v", err)
	}
	regs := saved
	insn, err := setSyscall(&regs, syscall.CLONE_NEWUSER)
	if err != nil {
		return err
	}
	pc := programCounter(&saved)
	orig := make([]byte, len(insn))
	if _, err := syscall.PtracePeekText(pid, pc, orig); err != nil {
		return fmt.Errorf("ptrace peektext: %v", err)
	}
	if _, err := syscall.PtracePokeText(pid, pc, insn); err != nil {
		return fmt.Errorf("ptrace poketext: %v", err)
	}
	if err := stepOver(pid, &regs); err != nil {
		return err
	}
	if e := syscallErrno(&regs); e != 0 {
		return fmt.Errorf("unshare(CLONE_NEWUSER): %v", e)
	}
	if _, err := syscall.PtracePokeText(pid, pc, orig); err != nil {
		return fmt.Errorf("ptrace poketext: %v", err)
	}
	if err := syscall.PtraceSetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	return nil
}

// stepOver sets regs, runs the program pid one instruction (the injected
// system call) and reads its registers back into regs.
func stepOver(pid int, regs *syscall.PtraceRegs) error {
	if err := syscall.PtraceSetRegs(pid, regs); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	if err := syscall.PtraceSingleStep(pid); err != nil {
		return fmt.Errorf("ptrace singlestep: %v", err)
	}
	if err := waitStop(pid); err != nil {
		return err
	}
	if err := syscall.PtraceGetRegs(pid, regs); err != nil {
		return fmt.Errorf("ptrace getregs: %v", err)
	}
	return nil
}
