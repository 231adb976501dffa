package caller

import (
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// callBody is a call message's body as the caller writes it: wire frames
// it, and its page and response format are envelope's types.
type callBody = wire.Call[envelope.Page, envelope.ResponseFormat]
