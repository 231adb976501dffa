package mesh

import (
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go"
)

// reconnectForever is the nats.go MaxReconnects value of a connection
// that keeps trying for as long as the process runs: the default, because
// a worker or a long-running caller that silently gives up after an outage
// serves nobody and is never restarted by its supervisor.
const reconnectForever = -1

// connectionLogging logs every change of a connection's state, so an
// outage and its end are visible at the default level and a connection
// closed for good says why. Failed reconnect attempts log at debug: an
// outage of hours would otherwise flood the log.
func connectionLogging(log *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil || nc.IsClosed() {
				return // our own Close, not an outage
			}
			log.Warn("NATS connection lost; reconnecting", "server", nc.ConnectedUrlRedacted(), "err", err)
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Debug("NATS reconnect attempt failed", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS connection re-established", "server", nc.ConnectedUrlRedacted(), "reconnects", nc.Stats().Reconnects)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			// nil: closed by its owner. A permissions violation is no
			// reason to close (nats.go keeps the connection), only the
			// last refusal heard: a catalogue's probes leave one.
			if err := nc.LastError(); err != nil && !errors.Is(err, nats.ErrPermissionViolation) {
				log.Error("NATS connection closed for good", "err", err)
			}
		}),
	}
}
