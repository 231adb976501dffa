package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/toolmesh/toolmesh"
	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/worker"
)

// modelTurn is an assistant message with tool_calls, as OpenAI's Chat
// Completions API returns it (choices[0].message). The model calls tools
// by their provider names: weather_current is the mesh's weather.current,
// since OpenAI refuses dots in names. Its arguments arrive as a string.
const modelTurn = `{
  "role": "assistant",
  "content": null,
  "tool_calls": [
    {"id": "call_1", "type": "function",
     "function": {"name": "weather_current", "arguments": "{\"city\":\"Paris\"}"}},
    {"id": "call_2", "type": "function",
     "function": {"name": "weather_current", "arguments": "{\"city\":\"Paris\",\"unit\":\"kelvin\"}"}}
  ]
}`

// WeatherIn is weather.current's input; unit may only be c or f.
type WeatherIn struct {
	City string `json:"city" jsonschema:"the city's name"`
	Unit string `json:"unit,omitempty" toolmesh:"default=c,enum=c|f"`
}

// WeatherOut is weather.current's result.
type WeatherOut struct {
	City string  `json:"city"`
	Temp float64 `json:"temp"`
	Unit string  `json:"unit"`
}

// weather is a stand-in for a real weather service.
func weather(_ context.Context, _ *worker.Request, in WeatherIn) (WeatherOut, error) {
	t := 18.0
	if in.Unit == "f" {
		t = t*9/5 + 32
	}
	return WeatherOut{City: in.City, Temp: t, Unit: in.Unit}, nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A whole mesh in this process: server, worker and caller.
	m, err := toolmesh.StartMesh(ctx, toolmesh.MeshConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)
	spec := envelope.ToolSpec{Name: "weather.current", Description: "The current temperature in a city"}
	if err := worker.AddTool(m.Worker, spec, weather); err != nil {
		log.Fatal(err)
	}

	// The tools in the provider's shape: ts.Tools is the request's
	// "tools" member, and ts.Names maps the model's names back.
	ts, err := provider.Export(m.Worker.Specs(), provider.ExportOptions{Provider: provider.OpenAI})
	if err != nil {
		log.Fatal(err)
	}
	name, _ := ts.Names.ProviderName("weather.current")
	fmt.Printf("offered %d tool(s): weather.current as %s\n", len(ts.Tools), name)

	// Run the model's calls. A call that fails, or could not run, becomes
	// a tool message the model can read and correct: Dispatch itself fails
	// only on output that is not the provider's shape at all.
	d, err := m.Caller.Dispatch(ctx, ts, json.RawMessage(modelTurn), caller.WithConcurrency(4))
	if err != nil {
		log.Fatal(err)
	}
	// d.Messages go after the assistant message in the conversation.
	for _, msg := range d.Messages {
		fmt.Println(string(msg))
	}
}
