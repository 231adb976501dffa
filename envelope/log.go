package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolmesh/toolmesh/internal/textcut"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// LogMessage is one log message a tool sends its caller while it runs —
// an MCP server's notifications/message, as the bridge relays it. It
// travels as the "log" member of a progress event (docs/protocol.md
// §5.1), whose message is the log's one-line text, so a peer that does not
// know the member shows it as progress.
type LogMessage struct {
	// Level is the syslog severity MCP uses: debug, info, notice,
	// warning, error, critical, alert or emergency.
	Level string `json:"level"`
	// Logger names the log's source ("" when unnamed).
	Logger string `json:"logger,omitempty"`
	// Data is the message: any JSON value, a string most often.
	Data json.RawMessage `json:"data"`
}

// logLevels are MCP's log levels, least severe first.
func logLevels() []string {
	return []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
}

// LogEvent is a progress event carrying m, its message m's text.
func LogEvent(m LogMessage) ToolEvent {
	return ToolEvent{Type: EventProgress, Message: m.text(), Log: &m}
}

// text is the message on one line: "[info] logger: data", a string's
// data as it is, any other as compact JSON, at most 500 bytes of it.
func (m LogMessage) text() string {
	data := string(m.Data)
	var s string
	if json.Unmarshal(m.Data, &s) == nil {
		data = s
	}
	data = textcut.Clip(data, 500)
	data = strings.ReplaceAll(data, "\n", " ")
	if m.Logger == "" {
		return fmt.Sprintf("[%s] %s", m.Level, data)
	}
	return fmt.Sprintf("[%s] %s: %s", m.Level, m.Logger, data)
}

// validate checks a log member: a known level and data that is JSON.
func (m *LogMessage) validate() error {
	if !validLevel(m.Level) {
		return fmt.Errorf("level %q is not one of %s", m.Level, strings.Join(logLevels(), ", "))
	}
	if len(m.Data) == 0 || !wire.Valid(m.Data) {
		return errors.New("data is required and must be JSON")
	}
	return nil
}

func validLevel(l string) bool {
	for _, v := range logLevels() {
		if v == l {
			return true
		}
	}
	return false
}

// appendLog writes a progress event's log member.
func (e ToolEvent) appendLog(b []byte) ([]byte, error) {
	if err := e.Log.validate(); err != nil {
		return nil, fmt.Errorf("progress event log: %w", err)
	}
	enc, err := json.Marshal(e.Log)
	if err != nil {
		return nil, fmt.Errorf("progress event log: %w", err)
	}
	return append(append(b, `,"log":`...), enc...), nil
}

// parseLog reads a progress event's log member from the members the
// scanner left unknown.
func (ev *ToolEvent) parseLog(m *eventMembers) error {
	for _, u := range m.unknown {
		if u.name != "log" || wire.IsNull(u.value) {
			continue
		}
		var l LogMessage
		if err := json.Unmarshal(u.value, &l); err != nil {
			return fieldError("event progress", "log", err)
		}
		if err := l.validate(); err != nil {
			return fieldError("event progress", "log", err)
		}
		ev.Log = &l
	}
	return nil
}
