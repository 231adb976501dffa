package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	events := [][]byte{[]byte(`{"type":"start","tool_id":"x"}`), []byte(`{"type":"delta","data":"a\nb"}`), []byte(`{"type":"result","data":1}`)}
	body := AppendEventsHead(nil, 7, []int{len(events[0]), len(events[1]), len(events[2])})
	body = append(body, bytes.Join(events, nil)...)
	f, err := ParseFrame(body)
	if err != nil || f.Kind != FrameEvents || f.Seq != 7 {
		t.Fatalf("got %+v, %v", f, err)
	}
	got, err := f.Events()
	if err != nil || len(got) != 3 || !bytes.Equal(got[1], events[1]) {
		t.Fatalf("events %q, %v", got, err)
	}

	chunk := append(AppendChunkHead(nil, 3, 2, 5), "piece"...)
	if f, err := ParseFrame(chunk); err != nil || f.Kind != FrameChunk || f.Seq != 3 || f.Part != 2 || f.Parts != 5 || string(f.Payload) != "piece" {
		t.Fatalf("chunk %+v, %v", f, err)
	}

	beat := append(AppendBeatHead(nil, "pool.01J", 1000), "A B C "...)
	f, err = ParseFrame(beat)
	if err != nil || f.Kind != FrameBeat || f.Worker != "pool.01J" || f.Interval != 1000 {
		t.Fatalf("beat %+v, %v", f, err)
	}
	var ids []string
	f.EachCallID(func(id []byte) { ids = append(ids, string(id)) })
	if strings.Join(ids, ",") != "A,B,C" {
		t.Fatalf("ids %v", ids)
	}

	if f, err := ParseFrame([]byte(`{"type":"result","data":1}`)); err != nil || f.Kind != FrameBare || f.Seq != 1 {
		t.Fatalf("bare %+v, %v", f, err)
	}
}

func TestFrameRefusesLies(t *testing.T) {
	for _, body := range []string{
		"tm2 ev seq=1 len=5\n{}",         // payload shorter than said
		"tm2 ev seq=1 len=1\n{}",         // payload longer than said
		"tm2 ev seq=1 len=0\n",           // empty event
		"tm2 ev len=2\n{}",               // no seq
		"tm2 ev seq=0 len=2\n{}",         // seq 0
		"tm2 chunk seq=1 part=3/2\nx",    // part past the whole
		"tm2 chunk seq=1\nx",             // no part
		"tm2 hb interval=1\nA",           // no worker
		"tm2 hb worker=a.>\nA",           // wildcard worker
		"tm2 what seq=1\n",               // unknown kind
		"tm3 ev seq=1 len=2\n{}",         // another version
		"tm2 ev seq=-1 len=2\n{}",        // negative
		"tm2 ev seq=1 len=2,x\n{}",       // bad length
		"tm2 ev seq=1 len=2 bare\n{}",    // pair without =
		"tm2ev seq=1 len=2\n{}",          // no space after the tag
		"tm2 ev seq=99999999999999999\n", // too many digits
		"tm2 ev seq=1 seq=7 len=2\n{}",   // a key given twice
		"tm2 hb worker=a worker=b\nA",    // a key given twice
	} {
		f, err := ParseFrame([]byte(body))
		if err == nil && f.Kind == FrameEvents {
			_, err = f.Events()
		}
		if err == nil {
			t.Errorf("%q accepted as %+v", body, f)
		}
	}
}

func TestSplitCall(t *testing.T) {
	for _, c := range []struct {
		body, meta, rest string
		bad              bool
	}{
		{`{"args":{}}`, "", `{"args":{}}`, false},
		{"tm2 id=a\n{\"args\":{}}", " id=a", `{"args":{}}`, false},
		{"tm2\n{}", "", "{}", false},
		{"tm9 id=a\n{}", "", "", true},
		{"tm2 id=a", "", "", true},
		{"tm2x\n{}", "", "", true},
		{"  {}", "", "  {}", false},
	} {
		meta, rest, err := SplitCall([]byte(c.body))
		if (err != nil) != c.bad || string(meta) != c.meta || string(rest) != c.rest {
			t.Errorf("%q: meta %q rest %q err %v", c.body, meta, rest, err)
		}
	}
}

func TestAppendPairEscapes(t *testing.T) {
	b := AppendPair(nil, "bearer", "a b%\n=é")
	if string(b) != " bearer=a%20b%25%0A=%C3%A9" {
		t.Fatalf("got %q", b)
	}
	var got string
	if err := EachPair(b, func(k, v []byte) (err error) { got, err = Unescape(v); return }); err != nil || got != "a b%\n=é" {
		t.Fatalf("round trip %q, %v", got, err)
	}
}

// FuzzParseFrame: any reply body either fails or decodes to a frame whose
// parts lie within the body; events, when accepted, tile the payload.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{"tm2 ev seq=1 len=2,2\n{}{}", "tm2 chunk seq=4 part=1/2\nab", "tm2 ends ids=A,B len=2,1\n{}1", "tm2 ev seq=1 len=2 id=X\n{}", "tm2 hb worker=w interval=100\nA B", `{"type":"result"}`, "tm2", "tm", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fr, err := ParseFrame(body)
		if err != nil {
			return
		}
		if fr.Kind == FrameChunk && (fr.Part < 1 || fr.Part > fr.Parts) {
			t.Fatalf("part %d/%d accepted", fr.Part, fr.Parts)
		}
		if fr.Kind == FrameEvents {
			events, err := fr.Events()
			if err != nil {
				return
			}
			total := 0
			for _, e := range events {
				total += len(e)
			}
			if total != len(fr.Payload) {
				t.Fatalf("events cover %d of %d bytes", total, len(fr.Payload))
			}
		}
		if fr.ID != "" && !ValidCallID([]byte(fr.ID)) {
			t.Fatalf("call id %q accepted", fr.ID)
		}
		if fr.Kind == FrameEnds {
			ids, events, err := fr.Ends()
			if err != nil {
				return
			}
			total := 0
			for i, e := range events {
				total += len(e)
				if !ValidCallID([]byte(ids[i])) {
					t.Fatalf("call id %q accepted", ids[i])
				}
			}
			if total != len(fr.Payload) || len(ids) != len(events) {
				t.Fatalf("ends frame: %d ids, %d events covering %d of %d bytes", len(ids), len(events), total, len(fr.Payload))
			}
		}
	})
}

// FuzzSplitCall: a body either fails or splits into a line without a
// newline and the rest of the body.
func FuzzSplitCall(f *testing.F) {
	for _, s := range []string{"tm2 id=a\n{}", "{}", "tm2", "tm3 x=y\n{}", "tm2 a=%zz\n{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		meta, rest, err := SplitCall(body)
		if err != nil {
			return
		}
		if bytes.IndexByte(meta, '\n') >= 0 || len(meta)+len(rest) > len(body) {
			t.Fatalf("split %q into %q + %q", body, meta, rest)
		}
		_ = EachPair(meta, func(_, _ []byte) error { return nil })
	})
}
