package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/mcp/internal/mcpmap"
)

// heldTTL is how long a 2026-07-28 call that asked waits for the client's
// retry before it is cancelled and its request state expires.
const heldTTL = 10 * time.Minute

// rounds are the gateway's 2026-07-28 tools/calls that asked (SEP-2322):
// a mesh call whose tool asks a question is held, waiting on it, and the
// tools/call is answered input_required with the question as input
// requests and a request state naming the held call, signed with this
// gateway's key (HMAC-SHA256) and bounded in time. The client's retry
// with inputResponses and that state answers the questions and resumes
// the same mesh call.
type rounds struct {
	key []byte
	mu  sync.Mutex
	// held are the calls waiting on their client's retry, by id.
	held map[string]*heldCall
}

func newRounds() *rounds {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &rounds{key: k, held: map[string]*heldCall{}}
}

// heldCall is one mesh call of a 2026-07-28 client that asked.
type heldCall struct {
	id, tool string
	owner    [sha256.Size]byte // the SHA-256 of the client's bearer
	caps     *mcp.ClientCapabilities
	asked    chan *openInput          // questions from the mesh call
	done     chan *mcp.CallToolResult // its result (buffered 1)
	cancel   context.CancelFunc       // ends the mesh call
	mu       sync.Mutex               // guards open, preset, round and live
	open     []*openInput             // asked, waiting on the client
	preset   mcp.InputResponseMap     // responses the first request carried
	timer    *time.Timer              // expiry
	round    int                      // rounds answered input_required
	// live is the client's request now waiting on the call, to which
	// its progress and log messages go (none between rounds).
	live *progress
}

// openInput is one question as MCP input requests, and where its answer goes.
type openInput struct {
	q      caller.Question
	inputs map[string]json.RawMessage // key → {"method","params"}
	bundle bool                       // an MCP server's requests (mcpmap.InputsQuestion)
	answer chan caller.Answer         // buffered 1
}

// answersInputs reports whether a 2026-07-28 client declared a
// capability through which it answers questions: elicitation or
// sampling. Roots alone (the go-sdk client declares it by default) does
// not make a call one that asks; a call that asks may still put a
// bridged server's roots/list to a client that declared roots.
func answersInputs(c *mcp.ClientCapabilities) bool {
	return c != nil && (c.Elicitation != nil || c.Sampling != nil)
}

// statelessCall serves a 2026-07-28 tools/call: a retry carrying request
// state resumes its held call; a first call from a client that answers
// input requests runs held (its questions become input_required rounds);
// any other runs as a call that cannot be asked.
func (g *Gateway) statelessCall(ctx context.Context, req *mcp.CallToolRequest, meshTool string, kind relayKind, opts []caller.Option) (*mcp.CallToolResult, error) {
	p := req.Params
	if p.RequestState != "" {
		h, err := g.rounds.resume(p.RequestState, meshTool, bearerOf(req))
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		h.answerFrom(p.InputResponses)
		return g.rounds.next(ctx, req, h)
	}
	caps := req.ClientCapabilities()
	if !answersInputs(caps) {
		return nil, errNotHeld
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := g.rounds.start(meshTool, bearerOf(req), caps, p.InputResponses, cancel)
	go func() {
		defer cancel()
		st, err := g.cfg.Caller.Stream(callCtx, meshTool, json.RawMessage(args), append(opts, caller.OnQuestion(h.onQuestion))...)
		if err != nil {
			h.done <- problemResult(envelope.AsProblem(err, envelope.CodeInternal))
			return
		}
		defer st.Close()
		// Progress and logs go to the client's request now waiting on
		// the call, if one is (h.send, h.log).
		h.done <- relayTo(callCtx, h, st, kind.mcpResult)
	}()
	return g.rounds.next(ctx, req, h)
}

// errNotHeld says a 2026-07-28 call is served as one that cannot be asked.
var errNotHeld = errors.New("not held")

// start registers a new held call.
func (r *rounds) start(tool, bearer string, caps *mcp.ClientCapabilities, preset mcp.InputResponseMap, cancel context.CancelFunc) *heldCall {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	h := &heldCall{id: base64.RawURLEncoding.EncodeToString(id), tool: tool, owner: sha256.Sum256([]byte(bearer)), caps: caps, preset: preset, cancel: cancel,
		asked: make(chan *openInput, 16), done: make(chan *mcp.CallToolResult, 1)}
	h.timer = time.AfterFunc(heldTTL, func() { r.drop(h) })
	r.mu.Lock()
	r.held[h.id] = h
	r.mu.Unlock()
	return h
}

// drop forgets h and ends its mesh call.
func (r *rounds) drop(h *heldCall) {
	r.mu.Lock()
	delete(r.held, h.id)
	r.mu.Unlock()
	h.timer.Stop()
	h.cancel()
}

// next waits for the held call's next round: the questions still open
// (a retry that did not answer them all), new questions, or its result.
func (r *rounds) next(ctx context.Context, req *mcp.CallToolRequest, h *heldCall) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	open := len(h.open) > 0
	h.live = &progress{ctx: ctx, req: req, token: req.Params.GetProgressToken()}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.live = nil
		h.mu.Unlock()
	}()
	if !open {
		select {
		case q := <-h.asked:
			h.add(q)
		case res := <-h.done:
			r.drop(h)
			return res, nil
		case <-ctx.Done():
			r.drop(h)
			return nil, ctx.Err()
		}
	}
	for more := true; more; { // questions asked together go in one round
		select {
		case q := <-h.asked:
			h.add(q)
		default:
			more = false
		}
	}
	h.timer.Reset(heldTTL)
	return &mcp.CallToolResult{InputRequests: h.requests(), RequestState: r.sign(h)}, nil
}

// sign is the request state of h's next round: id, tool and expiry,
// with their HMAC under the gateway's key.
func (r *rounds) sign(h *heldCall) string {
	h.mu.Lock()
	h.round++
	round := h.round
	h.mu.Unlock()
	payload := h.id + "|" + h.tool + "|" + strconv.Itoa(round) + "|" + strconv.FormatInt(time.Now().Add(heldTTL).Unix(), 10)
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// resume verifies a request state and returns the held call it names,
// when the retry presents the bearer the first request did (none over
// stdio or without --bearer-env).
func (r *rounds) resume(state, tool, bearer string) (*heldCall, error) {
	enc, sig, _ := strings.Cut(state, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	m := hmac.New(sha256.New, r.key)
	m.Write(payload)
	if err1 != nil || err2 != nil || !hmac.Equal(got, m.Sum(nil)) {
		return nil, errors.New("requestState failed its integrity check")
	}
	parts := strings.Split(string(payload), "|")
	exp, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if len(parts) != 4 || err != nil || parts[1] != tool {
		return nil, errors.New("requestState does not belong to this tool")
	}
	if time.Now().Unix() > exp {
		return nil, errors.New("requestState has expired: call the tool again")
	}
	r.mu.Lock()
	h := r.held[parts[0]]
	r.mu.Unlock()
	if h == nil {
		return nil, errors.New("no call waits on this requestState any more (it ended, or the gateway restarted): call the tool again")
	}
	if owner := sha256.Sum256([]byte(bearer)); subtle.ConstantTimeCompare(owner[:], h.owner[:]) != 1 {
		return nil, errors.New("requestState belongs to another client's call")
	}
	return h, nil
}

// onQuestion is the held mesh call's answerer: a question becomes input
// requests of the methods the client declared; answered at once from the
// responses the first request carried when they hold every key, else put
// to the client in the next round and waited for.
func (h *heldCall) onQuestion(ctx context.Context, q caller.Question) (caller.Answer, error) {
	oi := inputsOf(q, h.caps)
	if len(oi.inputs) == 0 {
		return caller.Answer{}, envelope.NewProblem(envelope.CodeInputRequired,
			"the tool asked a question this MCP client declared no capability to answer: "+q.Message).
			WithExtension("question", map[string]any{"question_id": q.ID, "message": q.Message, "schema": q.Schema})
	}
	h.mu.Lock()
	a, ok := oi.answerFrom(h.preset)
	h.preset = nil
	h.mu.Unlock()
	if ok {
		return a, nil
	}
	select {
	case h.asked <- oi:
	case <-ctx.Done():
		return caller.Dismiss(), nil
	}
	select {
	case a := <-oi.answer:
		return a, nil
	case <-ctx.Done():
		return caller.Dismiss(), nil
	}
}

// send forwards a progress message to the request waiting on the call.
func (h *heldCall) send(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live != nil {
		h.live.send(msg)
	}
}

// log forwards a log message to the request waiting on the call.
func (h *heldCall) log(l *envelope.LogMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live != nil {
		h.live.log(l)
	}
}

// add opens q for the next round.
func (h *heldCall) add(q *openInput) {
	h.mu.Lock()
	h.open = append(h.open, q)
	h.mu.Unlock()
}

// requests are the open questions' input requests, by key.
func (h *heldCall) requests() mcp.InputRequestMap {
	h.mu.Lock()
	raw := map[string]json.RawMessage{}
	for _, q := range h.open {
		for k, v := range q.inputs {
			raw[k] = v
		}
	}
	h.mu.Unlock()
	b, _ := json.Marshal(raw)
	var m mcp.InputRequestMap
	if err := json.Unmarshal(b, &m); err != nil {
		return mcp.InputRequestMap{}
	}
	return m
}

// answerFrom answers each open question whose keys the responses hold;
// the others stay open for the next round.
func (h *heldCall) answerFrom(responses mcp.InputResponseMap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var still []*openInput
	for _, q := range h.open {
		if a, ok := q.answerFrom(responses); ok {
			q.answer <- a
			continue
		}
		still = append(still, q)
	}
	h.open = still
}

// inputsOf is q as input requests: an MCP server's own (the bridge's
// question, mcpmap.QuestionInputs) under their keys, else one request
// under the question's id — sampling/createMessage for a sampling
// question, elicitation/create for any other — each only when the
// client declared its method's capability.
func inputsOf(q caller.Question, caps *mcp.ClientCapabilities) *openInput {
	oi := &openInput{q: q, inputs: map[string]json.RawMessage{}, answer: make(chan caller.Answer, 1)}
	if reqs, ok := mcpmap.QuestionInputs(q.Schema); ok {
		oi.bundle = true
		for k, r := range reqs {
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(r, &m) == nil && declares(caps, m.Method) {
				oi.inputs[k] = r
			}
		}
		return oi
	}
	var method string
	var params any
	switch {
	case q.Sampling != nil && caps.Sampling != nil:
		method, params = "sampling/createMessage", q.Sampling
	case caps.Elicitation != nil:
		method, params = "elicitation/create", mcpmap.ElicitParams(elicitMessage(q), q.Schema)
	default:
		return oi
	}
	b, _ := json.Marshal(map[string]any{"method": method, "params": params})
	oi.inputs[q.ID] = b
	return oi
}

// declares reports whether caps holds the capability method needs.
func declares(c *mcp.ClientCapabilities, method string) bool {
	switch method {
	case "elicitation/create":
		return c.Elicitation != nil
	case "sampling/createMessage":
		return c.Sampling != nil
	case "roots/list":
		return c.RootsV2 != nil
	}
	return false
}

// answerFrom is the answer the responses give q, when they hold all its keys.
func (oi *openInput) answerFrom(responses mcp.InputResponseMap) (caller.Answer, bool) {
	if len(responses) == 0 {
		return caller.Answer{}, false
	}
	for k := range oi.inputs {
		if responses[k] == nil {
			return caller.Answer{}, false
		}
	}
	if oi.bundle {
		content := map[string]mcp.InputResponse{}
		for k := range oi.inputs {
			content[k] = responses[k]
		}
		a, err := caller.Accept(content)
		return a, err == nil
	}
	return plainAnswer(responses[oi.q.ID])
}

// plainAnswer is a mesh question's answer from the client's response:
// an elicitation's action and content, or a sampling reply's text.
func plainAnswer(r mcp.InputResponse) (caller.Answer, bool) {
	switch r := r.(type) {
	case *mcp.ElicitResult:
		action, content, ok := mcpmap.Answer(r)
		return caller.Answer{Action: action, Content: content}, ok
	case *mcp.CreateMessageWithToolsResult:
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				a, err := caller.Accept(envelope.SamplingAnswer{Text: t.Text, Model: r.Model, StopReason: r.StopReason})
				return a, err == nil
			}
		}
		return caller.Dismiss(), true
	}
	return caller.Answer{}, false
}
