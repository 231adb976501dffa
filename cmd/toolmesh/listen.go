package main

import (
	"errors"
	"net"
	"syscall"

	"github.com/toolmesh/toolmesh/envelope"
)

// checkListen tries the address `toolmesh dev` will serve on, so a busy
// port or a malformed --listen fails at once with the reason instead of
// after the embedded server's readiness wait.
func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	bad := func(reason string) error {
		return envelope.Problemf(envelope.CodeInvalidConfig, "--listen %s: %s", addr, reason).
			WithFix("Choose another host:port with --listen (port 0 picks a free one), or stop whatever uses it.", envelope.HasPlaceholders)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return bad(err.Error())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return bad("address already in use")
		}
		return bad(err.Error())
	}
	return ln.Close()
}
