package wire

import "encoding/json"

// AppendResultEvent appends the result event {"type":"result","data":…}
// carrying data to b: the bytes envelope's ToolEvent of type result with
// this data writes as JSON (FuzzAppendResultEvent holds the two together), without checking
// data again. It is for the worker's terminal result, whose data
// checkResult made with json.Marshal or checked with Valid; data
// that is not valid JSON in UTF-8 makes an invalid event. Empty data is
// written as null.
func AppendResultEvent(b []byte, data json.RawMessage) []byte {
	b = append(b, `{"type":"result","data":`...)
	if len(data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, data...)
	}
	return append(b, '}')
}
