//go:build linux

package bridge

import "syscall"

// confine copies a sandbox plan's namespaces, id mappings and credentials
// onto the attributes the supervisor prepared for the server's process.
func confine(a, plan *syscall.SysProcAttr) {
	a.Cloneflags, a.UidMappings, a.GidMappings, a.Credential = plan.Cloneflags, plan.UidMappings, plan.GidMappings, plan.Credential
}
