package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// FrameKind names what a reply message carries (protocol v2, §5).
type FrameKind uint8

const (
	// FrameBare is a body that is one ToolEvent's JSON with no frame line:
	// the only message of a unary call or a plain request, numbered 1.
	FrameBare FrameKind = iota
	// FrameEvents carries one or more whole events, numbered from Seq.
	FrameEvents
	// FrameChunk carries piece Part of Parts of one event too large for a
	// message; the piece is numbered Seq.
	FrameChunk
	// FrameBeat is a worker's heartbeat to one caller: it names the
	// worker, its beat interval and every call of that caller it holds.
	FrameBeat
	// FrameEnds carries the replies of several unary calls of one batch
	// (§4.3): each call's only event, its terminal, numbered 1, in the
	// order of the frame's ids. See Frame.Ends.
	FrameEnds
)

// Frame kinds on the wire.
const (
	frameEvents = "ev"
	frameChunk  = "chunk"
	frameBeat   = "hb"
	frameEnds   = "ends"
)

// MaxFrameEvents caps the events packed into one message, so that its
// frame line stays short and one message never holds a whole window.
const MaxFrameEvents = 512

// Frame is one decoded reply message.
type Frame struct {
	Kind FrameKind
	// Seq numbers the first event (FrameEvents) or the piece (FrameChunk).
	Seq int64
	// Part and Parts place a chunk: piece Part (1-based) of Parts.
	Part, Parts int
	// Worker and Interval (ms) are a heartbeat's sender and beat interval.
	Worker   string
	Interval int64
	// ID names the call an events or chunk frame belongs to when the
	// frame arrives on a batch's shared reply subject (§4.3); "" otherwise.
	// It aliases the body.
	ID string
	// Payload is what follows the frame line: the events, the piece, or a
	// heartbeat's space-separated call ids. A bare frame's payload is the
	// event's JSON.
	Payload []byte
	lens    []byte // FrameEvents, FrameEnds: the comma-separated byte lengths
	ids     []byte // FrameEnds: the comma-separated call ids
}

// ParseFrame decodes a reply body. Payload aliases body.
func ParseFrame(body []byte) (Frame, error) {
	if !isTagStart(body) {
		return Frame{Kind: FrameBare, Seq: 1, Payload: body}, nil
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		nl = len(body)
	}
	if nl >= MaxMetaLine {
		return Frame{}, fmt.Errorf("frame line longer than %d bytes", MaxMetaLine)
	}
	line := body[:nl]
	if err := checkTag(line); err != nil {
		return Frame{}, err
	}
	var f Frame
	if nl < len(body) {
		f.Payload = body[nl+1:]
	}
	kind, pairs, _ := bytes.Cut(bytes.TrimLeft(line[len(wireTag):], " "), []byte(" "))
	switch string(kind) {
	case frameEvents:
		f.Kind = FrameEvents
	case frameChunk:
		f.Kind = FrameChunk
	case frameBeat:
		f.Kind = FrameBeat
	case frameEnds:
		f.Kind = FrameEnds
	default:
		return Frame{}, fmt.Errorf("unknown frame kind %.16q", kind)
	}
	var seen uint8
	err := EachPair(pairs, func(key, v []byte) error {
		if bit := frameKeyBit(key); bit != 0 {
			if seen&bit != 0 {
				return fmt.Errorf("frame %s given twice", key)
			}
			seen |= bit
		}
		return f.setPair(key, v)
	})
	if err != nil {
		return Frame{}, err
	}
	return f, f.check()
}

// frameKeyBit numbers the keys a frame line knows, so that one given
// twice is refused (0 for a key it does not know, which is ignored).
func frameKeyBit(key []byte) uint8 {
	for i, k := range [...]string{"seq", "part", "len", "worker", "interval", "ids", MetaID} {
		if string(key) == k {
			return 1 << i
		}
	}
	return 0
}

// setPair reads one key of a frame line; unknown keys are ignored.
func (f *Frame) setPair(key, v []byte) error {
	var err error
	switch string(key) {
	case "seq":
		f.Seq, err = Digits(v)
	case "part":
		f.Part, f.Parts, err = parsePart(v)
	case "len":
		f.lens = v
	case "worker":
		if !ValidWorkerID(string(v)) {
			return fmt.Errorf("malformed worker id %.40q", v)
		}
		f.Worker = string(v)
	case "interval":
		f.Interval, err = Digits(v)
	case "ids":
		f.ids = v
	case MetaID:
		if !ValidCallID(v) {
			return fmt.Errorf("malformed call id %.40q", v)
		}
		f.ID = unsafe.String(&v[0], len(v))
	}
	if err != nil {
		return fmt.Errorf("frame %s: %w", key, err)
	}
	return nil
}

// check tells whether the frame has what its kind needs.
func (f *Frame) check() error {
	switch {
	case f.Kind == FrameEnds && (len(f.ids) == 0 || len(f.lens) == 0):
		return errors.New("ends frame without ids or len")
	case f.Kind != FrameBeat && f.Kind != FrameEnds && f.Seq < 1:
		return errors.New("frame without seq (want seq=1 or more)")
	case f.Kind == FrameEvents && len(f.lens) == 0:
		return errors.New("events frame without len")
	case f.Kind == FrameChunk && f.Parts == 0:
		return errors.New("chunk frame without part")
	case f.Kind == FrameBeat && f.Worker == "":
		return errors.New("heartbeat frame without worker")
	}
	return nil
}

// parsePart reads "i/n" with 1 <= i <= n.
func parsePart(v []byte) (int, int, error) {
	a, b, ok := bytes.Cut(v, []byte("/"))
	i, errI := Digits(a)
	n, errN := Digits(b)
	if !ok || errI != nil || errN != nil || i < 1 || i > n {
		return 0, 0, fmt.Errorf("want i/n with 1 <= i <= n, got %.20q", v)
	}
	return int(i), int(n), nil
}

// Events splits an events frame's payload into its events, in order. The
// lengths must add up to the payload exactly: a frame that lies about its
// contents is refused whole rather than half delivered.
func (f Frame) Events() ([][]byte, error) {
	out, err := splitLens(f.lens, f.Payload, MaxFrameEvents)
	if err != nil {
		return nil, fmt.Errorf("events frame: %w", err)
	}
	return out, nil
}

// EachCallID calls fn with every call id a heartbeat names (separated
// by ASCII white space, as bytes.Fields splits them, without its slice).
// The id aliases the frame's payload: fn copies what it keeps.
func (f Frame) EachCallID(fn func(id []byte)) {
	b := f.Payload
	for i := 0; i < len(b); {
		if isSpace(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && !isSpace(b[j]) {
			j++
		}
		fn(b[i:j])
		i = j
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// AppendEventsHead appends the line of an events frame: events numbered
// from seq, of the given encoded sizes.
func AppendEventsHead(b []byte, seq int64, sizes []int) []byte {
	b = append(b, wireTag+" "+frameEvents...)
	b = AppendIntPair(b, "seq", seq)
	return append(appendLens(b, sizes), '\n')
}

// appendLens appends " len=a,b,…": the sizes of what follows a line.
func appendLens(b []byte, sizes []int) []byte {
	b = append(b, " len="...)
	for i, n := range sizes {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return b
}

// AppendChunkHead appends the line of piece i of n, numbered seq.
func AppendChunkHead(b []byte, seq int64, i, n int) []byte {
	b = append(b, wireTag+" "+frameChunk...)
	b = AppendIntPair(b, "seq", seq)
	b = append(b, " part="...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\n')
}

// AppendBeatHead appends the line of a heartbeat from worker, beating
// every interval ms; the caller appends the call ids, space-separated.
func AppendBeatHead(b []byte, worker string, intervalMS int64) []byte {
	b = append(b, wireTag+" "+frameBeat+" worker="...)
	b = append(b, worker...)
	b = AppendIntPair(b, "interval", intervalMS)
	return append(b, '\n')
}
