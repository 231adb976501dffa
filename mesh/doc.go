// Package mesh holds what a user of workers and callers needs on NATS:
// the subjects of a mesh (Subjects), connect options (ConnectOptions,
// Connect) with reconnect logging, the limits and defaults of wire
// protocol v2 (docs/protocol.md) that worker and caller configurations
// refer to, the per-tool load statistics workers publish (ToolLoad,
// Histogram), and the default W3C trace propagator.
//
// A worked example — connect with the usual NATS credentials, report a
// failure to connect as the Problem a command prints, and name a mesh's
// subjects (for `nats req` or a monitoring rule):
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
//	subj := mesh.Subjects{}           // prefix "toolmesh"
//	fmt.Println(subj.Call("files.read")) // toolmesh.call.files.read
//
// The connection is what worker.New and caller.New take. The protocol's
// codecs are not here: they are internal to this module (internal/wire),
// so that no release is bound by them; the protocol itself is the
// contract. The embedded nats-server that makes one process a complete
// mesh is package mesh/embedded, kept apart so that importing mesh does
// not compile it.
package mesh
