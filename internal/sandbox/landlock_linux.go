//go:build linux

package sandbox

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock system calls, for the calling thread only. go-landlock's
// syscall package applies them to every thread through libcap's psx,
// which in a cgo build wraps pthread_create for the whole binary; the
// helper needs none of that, because it execs from the thread it
// confined. The constants and struct layouts are x/sys/unix's (the
// kernel's uapi).

// rulesetAttr is struct landlock_ruleset_attr up to ABI 7.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr (packed: 12 bytes
// are read, the padding after parentFD is ignored).
type pathBeneathAttr struct {
	allowed  uint64
	parentFD int32
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

const ruleNetPort = 2 // LANDLOCK_RULE_NET_PORT

// landlockABI returns the kernel's Landlock ABI version (an error when
// Landlock is absent or disabled).
func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

func createRuleset(a *rulesetAttr) (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(a)), unsafe.Sizeof(*a), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func addRule(ruleset int, ruleType int, attr unsafe.Pointer) error {
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), uintptr(ruleType), uintptr(attr), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

func addPathRule(ruleset int, a *pathBeneathAttr) error {
	return addRule(ruleset, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(a))
}

func addPortRule(ruleset int, a *netPortAttr) error {
	return addRule(ruleset, ruleNetPort, unsafe.Pointer(a))
}

// restrictSelf confines the calling thread (its no_new_privs must be set).
func restrictSelf(ruleset int) error {
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return e
	}
	return nil
}
