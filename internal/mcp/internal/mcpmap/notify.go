package mcpmap

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/envelope"
)

// LogMessage maps an MCP server's notifications/message onto the mesh's
// log event (docs/protocol.md §24); LoggingParams is its inverse.
func LogMessage(p *mcp.LoggingMessageParams) (envelope.LogMessage, error) {
	data, err := json.Marshal(p.Data)
	if err != nil {
		return envelope.LogMessage{}, err
	}
	return envelope.LogMessage{Level: string(p.Level), Logger: p.Logger, Data: data}, nil
}

// LoggingParams maps a mesh log event onto MCP's notifications/message.
func LoggingParams(l *envelope.LogMessage) *mcp.LoggingMessageParams {
	return &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.Level), Logger: l.Logger, Data: l.Data}
}

// MeshProgress maps an MCP progress notification onto a mesh progress
// event's percentage and message. The mesh's percentage never goes back
// (last is the call's latest), so it is the notification's share of its
// total, at least last, at most 100; without a total it stays last and
// the raw progress value travels in the message.
func MeshProgress(p *mcp.ProgressNotificationParams, last float64) (pct float64, msg string) {
	if p.Total <= 0 {
		return last, fmt.Sprintf("%s (%g)", p.Message, p.Progress)
	}
	return min(max(p.Progress/p.Total*100, last), 100), p.Message
}

// ProgressMessage is the message of the MCP progress notification a mesh
// progress event becomes: its percentage, when it has one, before its
// message. (MCP's progress value must grow with every notification,
// which a repeated mesh percentage would not, so the gateway counts
// notifications as the value and the percentage travels here.)
func ProgressMessage(pct *float64, msg string) string {
	if pct == nil {
		return msg
	}
	return strings.TrimSpace(fmt.Sprintf("%.0f%% %s", *pct, msg))
}
