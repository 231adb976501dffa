// Package mesh holds what a user of workers and callers needs on NATS:
// connect options (ConnectOptions, Connect) with reconnect logging, and a
// failure to connect as the Problem a command prints (DialProblem).
//
// A worked example — connect with the usual NATS credentials and report a
// failure to connect:
//
//	nc, err := mesh.Connect(ctx, mesh.ConnectOptions{
//		URL:   "nats://mesh.internal:4222",
//		Creds: "/etc/toolmesh/agent.creds",
//		Name:  "billing-agent",
//	})
//	if err != nil {
//		// unauthorized or connection_lost, with the URL's secrets hidden
//		return mesh.DialProblem("nats://mesh.internal:4222", err)
//	}
//	defer nc.Close()
//
// The connection is what worker.New and caller.New take. The protocol's
// subjects, defaults and codecs are not here: they are internal to this
// module (internal/wire), so that no release is bound by them; the
// protocol itself (docs/protocol.md) is the contract. The embedded nats-server that makes one process a complete
// mesh is package mesh/embedded, kept apart so that importing mesh does
// not compile it.
package mesh
