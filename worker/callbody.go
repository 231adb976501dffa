package worker

import (
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// callBody is a call message's body as the worker reads it: wire frames
// it, and its page and response format are envelope's types.
type callBody = wire.Call[envelope.Page, envelope.ResponseFormat]

// parseCallBody decodes a call body in one validation pass; its args
// alias data, the message's own payload (wire.ParseCall).
func parseCallBody(data []byte) (callBody, error) {
	return wire.ParseCall[envelope.Page, envelope.ResponseFormat](data)
}
