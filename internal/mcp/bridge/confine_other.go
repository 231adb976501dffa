//go:build !linux

package bridge

import "syscall"

// confine copies a sandbox plan's credentials onto the attributes the
// supervisor prepared for the server's process. Namespaces and id
// mappings are Linux's; elsewhere package sandbox reports the sandbox as
// unenforceable, so the bridge refuses a sandboxed server (or runs it
// unconfined under AllowUnconfined) before it gets here.
func confine(a, plan *syscall.SysProcAttr) {
	a.Credential = plan.Credential
}
