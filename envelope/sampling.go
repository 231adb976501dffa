package envelope

import "encoding/json"

// SamplingAnswerSchema is the schema of a sampling question's answer
// (docs/protocol.md §23.11): the model's reply as text, and optionally
// the model that wrote it and why it stopped. A flat form of strings, so
// an answerer that does not know sampling (a person at a terminal, an MCP
// client through elicitation) can answer it by typing the reply.
func SamplingAnswerSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"text":{"type":"string","title":"Reply","description":"The model's reply"},` +
		`"model":{"type":"string","title":"Model","description":"The model that wrote the reply"},` +
		`"stopReason":{"type":"string","title":"Stop reason","description":"Why the model stopped, such as endTurn"}},` +
		`"required":["text"]}`)
}

// SamplingAnswer is the content of an accepted sampling question.
type SamplingAnswer struct {
	Text       string `json:"text"`
	Model      string `json:"model,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}
