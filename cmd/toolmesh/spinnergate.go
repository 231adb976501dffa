package main

import (
	"io"
	"sync"
)

// spinnerGate is the writer a call's progress display draws through: while
// a question is on the terminal (docs/protocol.md §23) it is paused and
// drops the display's redraws, which would otherwise overwrite the
// question's prompt line every tick; resumed, the display draws again.
type spinnerGate struct {
	mu     sync.Mutex
	out    io.Writer
	paused int  // questions on the terminal (nested: one at a time, but counted)
	drawn  bool // something was drawn since the last pause: the line needs clearing
}

// newSpinnerGate is a gate to out, open.
func newSpinnerGate(out io.Writer) *spinnerGate { return &spinnerGate{out: out} }

// Write passes the display's output on unless a question is pending.
func (s *spinnerGate) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused > 0 {
		return len(p), nil
	}
	s.drawn = true
	return s.out.Write(p)
}

// pause stops the display and clears its line, for a question's prompt;
// when it returns, no redraw is in progress or will be until resume.
func (s *spinnerGate) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused++
	if s.drawn {
		_, _ = io.WriteString(s.out, "\r\x1b[2K") // the display's line, emptied
		s.drawn = false
	}
}

// resume lets the display draw again after the question was answered.
func (s *spinnerGate) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused > 0 {
		s.paused--
	}
}
