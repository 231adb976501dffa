package mesh_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/mesh"
	"github.com/toolmesh/toolmesh/mesh/embedded"
)

// The package doc's worked example: connect to a NATS server (here one
// started in this process; in production the mesh's URL and credentials)
// and hand the connection to worker.New or caller.New.
func Example() {
	ctx := context.Background()
	srv, err := embedded.Start(ctx, embedded.Config{NoJetStream: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(ctx) }()

	nc, err := mesh.Connect(ctx, mesh.ConnectOptions{URL: srv.ClientURL(), Name: "example"})
	if err != nil {
		fmt.Println(mesh.DialProblem(srv.ClientURL(), err))
		return
	}
	defer nc.Close()

	fmt.Println(nc.IsConnected())
	// Output:
	// true
}

// A failure to connect is a Problem that says whether new credentials or
// a retry can help, with the URL's secrets hidden.
func ExampleDialProblem() {
	url := "nats://admin:hunter2@mesh.example:4222"
	p := mesh.DialProblem(url, nats.ErrNoServers)
	fmt.Println(p.Code, p.Transient())
	fmt.Println(p.Detail)
	// Output:
	// connection_lost true
	// cannot reach NATS at nats://admin:xxxxx@mesh.example:4222: nats: no servers available for connection
}
