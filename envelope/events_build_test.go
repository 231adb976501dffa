package envelope

// The event builders the golden tests write events with; the worker
// builds these events as literals.

// startEvent opens a stream for tool and call, with optional metadata.
func startEvent(toolID, callID string, metadata map[string]any) ToolEvent {
	return ToolEvent{Type: EventStart, ToolID: toolID, CallID: callID, Metadata: metadata}
}

// questionEvent asks the caller: message to show, q's schema, worker id,
// timeout and approval.
func questionEvent(message string, q Question) ToolEvent {
	q.Action = ""
	return ToolEvent{Type: EventQuestion, Message: message, Question: &q}
}

// answeredEvent records that question id was settled with action.
func answeredEvent(id, action string) ToolEvent {
	return ToolEvent{Type: EventAnswered, Question: &Question{ID: id, Action: action}}
}
