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
// afresh where it would have. A signal that stops the program before an
// injected call ran is appended to held, undelivered (the call is stepped
// again), for the caller to queue again once the program is confined.
// Each call must return exactly 0. Any failure leaves the program
// stopped, for the caller to kill: it never runs unconfined.
func confineInto(pid, ruleset int, held *[]syscall.Signal) error {
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
		if err := stepOver(pid, &regs, len(insn), held); err != nil {
			return err
		}
		if err := syscallResult(&regs); err != nil {
			return fmt.Errorf("%s: %v", [...]string{"unshare(CLONE_NEWUSER)", "landlock_restrict_self", "close"}[c.call], err)
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
// system call, insnLen bytes long) and reads its registers back into
// regs. Only a SIGTRAP stop just past the instruction shows it ran: a
// signal pending for the program stops it before the instruction instead
// (its registers then still hold the call's number and arguments); that
// signal is appended to held, undelivered, and the program stepped again.
// Any other stop is an error.
func stepOver(pid int, regs *syscall.PtraceRegs, insnLen int, held *[]syscall.Signal) error {
	pc := programCounter(regs)
	if err := syscall.PtraceSetRegs(pid, regs); err != nil {
		return fmt.Errorf("ptrace setregs: %v", err)
	}
	for range maxHeldStops {
		if err := syscall.PtraceSingleStep(pid); err != nil {
			return fmt.Errorf("ptrace singlestep: %v", err)
		}
		sig, err := waitStop(pid)
		if err != nil {
			return err
		}
		if err := syscall.PtraceGetRegs(pid, regs); err != nil {
			return fmt.Errorf("ptrace getregs: %v", err)
		}
		stepped, err := classifyStep(sig, programCounter(regs), pc, insnLen)
		if err != nil || stepped {
			return err
		}
		*held = append(*held, sig)
	}
	return fmt.Errorf("the program was signalled %d times during an injected system call", maxHeldStops)
}

// classifyStep says what a stop with signal sig at at, of a program
// single-stepped from pc over an instruction insnLen bytes long, shows:
// the instruction ran (a SIGTRAP just past it), or it did not yet (another
// signal, still at pc: step again), or neither, an error.
func classifyStep(sig syscall.Signal, at, pc uintptr, insnLen int) (bool, error) {
	switch {
	case sig == syscall.SIGTRAP && at == pc+uintptr(insnLen):
		return true, nil
	case sig != syscall.SIGTRAP && at == pc:
		return false, nil
	}
	return false, fmt.Errorf("injected system call at %#x: unexpected stop (%v) at %#x", pc, sig, at)
}

// syscallResult is nil when the injected call returned exactly 0 (each of
// them returns 0 on success), else why not.
func syscallResult(r *syscall.PtraceRegs) error {
	switch v := returnValue(r); {
	case v == 0:
		return nil
	case -v > 0 && -v < 4096:
		return syscall.Errno(-v)
	default:
		return fmt.Errorf("returned %d, not 0", v)
	}
}
