package main

import (
	"log/slog"

	"github.com/nats-io/nats.go"
)

// logConnEvents logs the connection's disconnects, reconnects and close,
// so a long-running worker (or a slow call) says why it went quiet.
// The URLs are redacted: a password in a URL never reaches the log.
func logConnEvents(nc *nats.Conn, log *slog.Logger) {
	if log == nil {
		return
	}
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		if err != nil { // nil: our own Close, nothing to report
			log.Warn("disconnected from NATS; reconnecting", "err", err)
		}
	})
	nc.SetReconnectHandler(func(c *nats.Conn) {
		log.Warn("reconnected to NATS", "server", c.ConnectedUrlRedacted()) // closes the disconnect warning, at its level
	})
	nc.SetClosedHandler(func(c *nats.Conn) {
		if err := c.LastError(); err != nil {
			log.Warn("NATS connection closed", "err", err)
		}
	})
}
