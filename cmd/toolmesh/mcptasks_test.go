package main

import (
	"errors"
	"reflect"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/gateway"
)

// --task GLOB[:required][:ask-first] becomes the gateway's task rules;
// an unknown mark, or --task without --http (MCP tasks are HTTP-only),
// is invalid_config.
func TestMCPTaskFlags(t *testing.T) {
	f := mcpFlags{http: "127.0.0.1:0", tasks: []string{"conf.slow", "conf.job:required", "conf.ask:ask-first:required"}}
	if err := f.taskRules(); err != nil {
		t.Fatal(err)
	}
	want := []gateway.TaskRule{{Tools: "conf.slow"}, {Tools: "conf.job", Required: true}, {Tools: "conf.ask", Required: true, AskFirst: true}}
	if !reflect.DeepEqual(f.taskRule, want) {
		t.Fatalf("rules %+v, want %+v", f.taskRule, want)
	}
	for _, bad := range []mcpFlags{
		{http: "127.0.0.1:0", tasks: []string{"conf.slow:forever"}},
		{tasks: []string{"conf.slow"}},
	} {
		var p *envelope.Problem
		if err := bad.taskRules(); !errors.As(err, &p) || p.Code != envelope.CodeInvalidConfig {
			t.Errorf("flags %+v: %v, want invalid_config", bad.tasks, err)
		}
	}
}
