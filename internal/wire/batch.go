package wire

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"
)

// A batch message carries several unary calls to one tool that a caller
// had queued while its previous publish to that tool was in progress
// (protocol v2, §4.3): the calls travel in one NATS message and the worker
// that takes it runs each as if it had come alone. Its body is a batch
// line and then the calls' bodies back to back:
//
//	tm2 batch len=a,b,c\n<call a bytes><call b bytes><call c bytes>
//
// Each call body is a whole call whose metadata line begins "tm2 id=<id>":
// replies to batched calls name their call with an id= key in the frame
// line, since they share the batch's one reply subject.
const frameBatch = "batch"

// MaxBatchCalls is the most calls one batch message may carry. A worker
// refuses a larger batch whole. Callers keep batches smaller still (see
// caller.Config.NoCoalescing): every call in a batch goes to the worker the
// batch goes to, so small batches keep queue-group load sharing fair.
const MaxBatchCalls = 64

// batchPrefix starts every batch message.
var batchPrefix = []byte(wireTag + " " + frameBatch + " ")

// IsBatch reports whether body is a batch message (it starts with the
// batch line's tag and kind); SplitBatch then says whether it is a good one.
func IsBatch(body []byte) bool { return bytes.HasPrefix(body, batchPrefix) }

// SplitBatch returns the call bodies of a batch message and their call
// ids, in order; both alias body. It refuses the batch whole when the line
// is malformed, the lengths do not add up to the payload exactly, it holds
// no call or more than MaxBatchCalls, or a call does not begin with
// "tm2 id=<id>" (an id being 1-128 of A-Z a-z 0-9 _ -): a worker must be
// able to name every call of a batch it answers.
func SplitBatch(body []byte) (calls [][]byte, ids []string, err error) {
	if !IsBatch(body) {
		return nil, nil, errors.New("not a batch message")
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 || nl >= MaxMetaLine {
		return nil, nil, errors.New("batch line has no end within the line limit")
	}
	var lens []byte
	err = EachPair(body[len(batchPrefix):nl], func(key, v []byte) error {
		if string(key) == "len" {
			if lens != nil {
				return errors.New("len given twice")
			}
			lens = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("batch line: %w", err)
	}
	if len(lens) == 0 {
		return nil, nil, errors.New("batch line without len")
	}
	calls, err = splitLens(lens, body[nl+1:], MaxBatchCalls)
	if err != nil {
		return nil, nil, fmt.Errorf("batch: %w", err)
	}
	ids = make([]string, len(calls))
	for i, c := range calls {
		if ids[i], err = leadingID(c); err != nil {
			return nil, nil, fmt.Errorf("batch call %d: %w", i+1, err)
		}
	}
	return calls, ids, nil
}

// splitLens cuts payload into pieces of the comma-separated lengths,
// which must be 1 to max positive numbers adding up to len(payload).
func splitLens(lens, payload []byte, max int) ([][]byte, error) {
	n := bytes.Count(lens, []byte(",")) + 1
	if n > max {
		return nil, fmt.Errorf("%d parts, more than %d", n, max)
	}
	out := make([][]byte, 0, n)
	rest := payload
	for l := lens; len(l) > 0; {
		v, tail, _ := bytes.Cut(l, []byte(","))
		l = tail
		size, err := Digits(v)
		if err != nil || size == 0 || int(size) > len(rest) {
			return nil, fmt.Errorf("lengths %.40q do not match the %d-byte payload", lens, len(payload))
		}
		out = append(out, rest[:size])
		rest = rest[size:]
	}
	if len(out) != n || len(rest) != 0 {
		return nil, fmt.Errorf("lengths %.40q do not match the %d-byte payload", lens, len(payload))
	}
	return out, nil
}

// idPrefix is how every call of a batch begins.
var idPrefix = []byte(wireTag + " " + MetaID + "=")

// leadingID reads the id of a call body that begins "tm2 id=<id>" and
// then a space or the line's end.
func leadingID(call []byte) (string, error) {
	if !bytes.HasPrefix(call, idPrefix) {
		return "", fmt.Errorf("does not begin %q", idPrefix)
	}
	v := call[len(idPrefix):]
	end := 0
	for end < len(v) && v[end] != ' ' && v[end] != '\n' {
		end++
	}
	if end == len(v) || !ValidCallID(v[:end]) {
		return "", fmt.Errorf("malformed call id %.40q", v[:end])
	}
	return unsafe.String(&v[0], end), nil
}

// ValidCallID reports whether id is a call id as the wire allows it: 1-128
// characters of A-Z a-z 0-9 _ -, so that it is always one subject token.
func ValidCallID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, b := range id {
		if !callIDByte[b] {
			return false
		}
	}
	return true
}

// callIDByte marks the bytes a call id may hold (see ValidCallID): one
// load a byte, where comparisons took five ranges' worth on every id
// of every call, reply and batch.
var callIDByte = [256]bool{
	'-': true, '_': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
	'A': true, 'B': true, 'C': true, 'D': true, 'E': true, 'F': true, 'G': true, 'H': true, 'I': true, 'J': true,
	'K': true, 'L': true, 'M': true, 'N': true, 'O': true, 'P': true, 'Q': true, 'R': true, 'S': true, 'T': true,
	'U': true, 'V': true, 'W': true, 'X': true, 'Y': true, 'Z': true,
	'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true, 'g': true, 'h': true, 'i': true, 'j': true,
	'k': true, 'l': true, 'm': true, 'n': true, 'o': true, 'p': true, 'q': true, 'r': true, 's': true, 't': true,
	'u': true, 'v': true, 'w': true, 'x': true, 'y': true, 'z': true,
}

// AppendBatchHead appends the line of a batch of calls of the given
// encoded sizes; the caller appends the calls' bodies in the same order.
func AppendBatchHead(b []byte, sizes []int) []byte {
	b = append(b, batchPrefix[:len(batchPrefix)-1]...) // appendLens adds the space
	return append(appendLens(b, sizes), '\n')
}

// WithCallID returns the reply body of a batched call named by id: a bare
// event becomes an events frame of that one event, numbered 1, with id=;
// a frame gets " id=<id>" at the end of its line. Replies to batched calls
// share one subject, so the frame line is where they are told apart.
func WithCallID(body []byte, id string) []byte {
	if !isTagStart(body) {
		out := AppendEventsHead(make([]byte, 0, 40+len(id)+len(body)), 1, []int{len(body)})
		out = AppendPair(out[:len(out)-1], MetaID, id)
		return append(append(out, '\n'), body...)
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		nl = len(body)
	}
	out := make([]byte, 0, len(body)+5+len(id))
	out = AppendPair(append(out, body[:nl]...), MetaID, id)
	return append(out, body[nl:]...)
}

// Ends returns the call ids of an ends frame and each call's event, in
// order (both alias the body). The ids must be as many as the events,
// each a valid call id: a frame that lies is refused whole.
func (f Frame) Ends() ([]string, [][]byte, error) {
	events, err := splitLens(f.lens, f.Payload, MaxBatchCalls)
	if err != nil {
		return nil, nil, fmt.Errorf("ends frame: %w", err)
	}
	ids := make([]string, 0, len(events))
	for rest := f.ids; len(rest) > 0 && len(ids) <= len(events); {
		id, tail, _ := bytes.Cut(rest, []byte(","))
		rest = tail
		if !ValidCallID(id) {
			return nil, nil, fmt.Errorf("ends frame: malformed call id %.40q", id)
		}
		ids = append(ids, unsafe.String(&id[0], len(id)))
	}
	if len(ids) != len(events) {
		return nil, nil, fmt.Errorf("ends frame names %d calls for %d events", len(ids), len(events))
	}
	return ids, events, nil
}

// AppendEndsHead appends the line of an ends frame: the replies of the
// calls ids, of the given encoded sizes, follow in the same order.
func AppendEndsHead(b []byte, ids []string, sizes []int) []byte {
	b = append(b, wireTag+" "+frameEnds+" ids="...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, id...)
	}
	return append(appendLens(b, sizes), '\n')
}
