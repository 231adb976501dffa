//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"syscall"
)

// canInject says confineInto works on this architecture.
const canInject = true

// injectedCall is a system call the zygote makes a held program call:
// which one (callUnshare, …) and its first two arguments.
type injectedCall struct {
	call       int
	arg0, arg1 uint64
}

// The system calls confineInto injects (setSyscall knows their numbers).
const (
	callUnshare = iota
	callRestrictSelf
	callClose
)

// confineInto confines the traced program pid, stopped at its exec before
// its first instruction, by making it call, as its own first system calls:
// unshare(CLONE_NEWUSER) (a user namespace of its own, so its process
// limit counts only its own processes), landlock_restrict_self(ruleset, 0)
// (a Landlock domain of its own, from the ruleset the zygote passed it as
// descriptor ruleset) and close(ruleset). Its no_new_privs it inherits
// from the zygote. The system-call instruction is written over the
// instruction at its program counter, and for each call the registers are
// set and the program single-stepped over it (one stop each); then the
// instruction and the registers are put back, so the program starts
// afresh where it would have. Any failure leaves the program stopped, for
// the caller to kill: it never runs unconfined.
func confineInto(pid, ruleset int) error {
	var saved syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace getregs: %v", err)
	}
	calls := []injectedCall{
		{call: callUnshare, arg0: syscall.CLONE_NEWUSER},
		{call: callRestrictSelf, arg0: uint64(ruleset)},
		{call: callClose, arg0: uint64(ruleset)},
	}
	pc := programCounter(&saved)
	var orig []byte
	for i, c := range calls {
		regs := saved
		insn, err := setSyscall(&regs, c)
		if err != nil {
			return err
		}
		if i == 0 {
			if orig, err = swapText(pid, pc, insn); err != nil {
				return err
			}
		}
		if err := stepOver(pid, &regs); err != nil {
			return err
		}
		if e := syscallErrno(&regs); e != 0 {
			return fmt.Errorf("%s: %v", [...]string{"unshare(CLONE_NEWUSER)", "landlock_restrict_self", "close"}[c.call], e)
		}
	}
	if _, err := syscall.PtracePokeText(pid, pc, orig); err != nil {
		return fmt.Errorf("ptrace poketext: %v", err)
	}
	if err := syscall.PtraceSetRegs(pid, &saved); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	return nil
}

// swapText writes insn at pc in the program pid and returns what was there.
func swapText(pid int, pc uintptr, insn []byte) ([]byte, error) {
	orig := make([]byte, len(insn))
	if _, err := syscall.PtracePeekText(pid, pc, orig); err != nil {
		return nil, fmt.Errorf("ptrace peektext: %v", err)
	}
	if _, err := syscall.PtracePokeText(pid, pc, insn); err != nil {
		return nil, fmt.Errorf("ptrace poketext: %v", err)
	}
	return orig, nil
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
