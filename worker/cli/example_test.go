package cli_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// A command-line program as a mesh tool: the binding says how a call's
// arguments become argv ({arg.NAME} is one argv slot, never split or
// interpreted by a shell) and how its output becomes the result.
func ExampleRegisterFile() {
	m, err := meshtest.Start(meshtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	file, err := cli.Parse([]byte(`
tools:
  - name: shout
    description: Prints its text.
    input_schema:
      type: object
      properties: {text: {type: string}}
      required: [text]
    binding:
      cli:
        cmd: echo
        args_template: "{arg.text}"
        output_format: lines
`))
	if err != nil {
		log.Fatal(err)
	}
	if err := cli.RegisterFile(m.Worker, file, nil); err != nil {
		log.Fatal(err)
	}
	out, err := caller.CallAs[struct{ Lines []string }](context.Background(), m.Caller, "shout", map[string]string{"text": "hi; rm -rf /"})
	fmt.Printf("%q %v\n", out.Lines, err)
	// Output: ["hi; rm -rf /"] <nil>
}
