package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// A tenant's view: the catalogue, search, Describe and Watch show only the
// tools this NATS identity may call. Who may call what has one source of
// truth, the publish permissions the NATS server enforces on the
// connection's user; the catalogue asks the server for them
// ($SYS.REQ.USER.INFO, which answers every client about itself from
// nats-server 2.10) and keeps a tool exactly when the server would accept a
// publish to its call subject. When the server does not say (an older
// server, a refused ask) the view fails closed: a tool is shown only once
// the server has accepted a probe publish to its call subject (probeCalls),
// and the listing says so.

// permissionsWait bounds asking the server for this identity's
// permissions, and each probe round trip.
const permissionsWait = 2 * time.Second

// permView holds what the catalogue knows of what this identity may call,
// for the life of one connection: a reconnect (perhaps to a server with
// other permissions) starts over.
type permView struct {
	mu  sync.Mutex
	cur *access // nil: not asked yet
	// probing lets one probe round trip run at a time, so concurrent
	// readers needing the same tools send one probe each, not one each.
	probing sync.Mutex
}

// access is one connection's knowledge of what this identity may call.
// It is never changed once shared: a change makes a new one.
type access struct {
	epoch    uint64 // the connection's reconnect count+1 when it was made
	subjects wire.Subjects
	// known: the server told this identity's permissions (perms).
	known bool
	perms wire.PublishPermissions
	// why the server did not tell them (known false); verdicts then holds
	// each tool probed: whether the server accepted a publish to its call
	// subject.
	why      string
	verdicts map[string]bool
	// registryRefused: the server refused this identity the JetStream
	// API that holds the worker registry.
	registryRefused bool
}

// may reports whether the identity may call tool, as far as a shows: with
// the permissions unknown, only a tool whose probe the server accepted.
func (a *access) may(tool string) bool {
	switch {
	case a == nil:
		return false
	case a.known:
		return a.perms.MayPublish(a.subjects.Call(tool))
	default:
		return a.verdicts[tool]
	}
}

// decided reports whether a says, for every tool of specs, whether the
// identity may call it.
func (a *access) decided(specs []envelope.ToolSpec) bool {
	if a == nil || a.known {
		return a != nil
	}
	for _, s := range specs {
		if _, ok := a.verdicts[s.Name]; !ok {
			return false
		}
	}
	return true
}

// epoch is the connection's reconnect count+1 (0 is never an epoch).
func (c *Catalog) epoch() uint64 { return c.nc.Stats().Reconnects + 1 }

// current is what the catalogue knows for the connection as it is now,
// without asking anything; nil when it has not asked since the last
// reconnect.
func (c *Catalog) current() *access {
	c.perms.mu.Lock()
	defer c.perms.mu.Unlock()
	if a := c.perms.cur; a != nil && a.epoch == c.epoch() {
		return a
	}
	return nil
}

// access returns what the catalogue knows of this identity's
// permissions, asking the server once per connection.
func (c *Catalog) access(ctx context.Context) *access {
	c.perms.mu.Lock()
	defer c.perms.mu.Unlock()
	now := c.epoch()
	if a := c.perms.cur; a != nil && a.epoch == now {
		return a
	}
	a := &access{epoch: now, subjects: c.subjects, known: true}
	perms, err := c.askPermissions(ctx)
	if err != nil {
		a.known, a.why, a.verdicts = false, err.Error(), map[string]bool{}
		c.log.Debug("the server did not say what this identity may call; tools are probed and only those it accepts are listed", "err", err)
	}
	a.perms = perms
	if ctx.Err() == nil {
		c.perms.cur = a
	}
	return a
}

// update applies change to a copy of the current access of a's epoch and
// makes it current; it returns the result (a itself, changed in a copy,
// when the connection has moved on).
func (c *Catalog) update(a *access, change func(*access)) *access {
	c.perms.mu.Lock()
	defer c.perms.mu.Unlock()
	base := a
	if cur := c.perms.cur; cur != nil && cur.epoch == a.epoch {
		base = cur
	}
	next := *base
	change(&next)
	if cur := c.perms.cur; cur != nil && cur.epoch == a.epoch {
		c.perms.cur = &next
	}
	return &next
}

// decide makes sure the catalogue knows, for each of tools, whether this
// identity may call it: nothing to do when the server told the
// permissions; otherwise the tools not yet probed are probed, all in one
// round trip (probeCalls). An error leaves those tools undecided, and so
// not shown.
func (c *Catalog) decide(ctx context.Context, tools []string) (*access, error) {
	a := c.access(ctx)
	if a.known || len(undecided(a, tools)) == 0 {
		return a, nil
	}
	c.perms.probing.Lock()
	defer c.perms.probing.Unlock()
	if cur := c.current(); cur != nil {
		a = cur
	}
	need := undecided(a, tools)
	if len(need) == 0 {
		return a, nil
	}
	var err error
	if len(need) > maxProbe {
		need, err = need[:maxProbe], fmt.Errorf("more than %d tools to probe at once", maxProbe)
	}
	refused, perr := c.probeCalls(ctx, need)
	if perr != nil {
		return a, perr
	}
	return c.update(a, func(n *access) {
		if len(n.verdicts)+len(need) > maxVerdicts {
			n.verdicts = nil // start over rather than grow without bound
		}
		v := make(map[string]bool, len(n.verdicts)+len(need))
		maps.Copy(v, n.verdicts)
		for _, t := range need {
			v[t] = !refused[t]
		}
		n.verdicts = v
	}), err
}

// Bounds on probing: the tools one round trip probes, and the verdicts
// kept for one connection.
const (
	maxProbe    = 4096
	maxVerdicts = 1 << 16
)

// undecided lists, once each, the tools of tools that a has no verdict on.
func undecided(a *access, tools []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tools {
		if _, ok := a.verdicts[t]; !ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// probeCalls learns which of tools this identity may not call, in one
// round trip: it publishes one probe to each tool's call subject (no
// reply subject, no body, header Toolmesh-Probe; a worker drops it), then
// a PING. The server refuses a forbidden publish with a -ERR before its
// PONG; nats.go reports each through the connection's error handler, in
// order, so once the last error the connection holds after the PONG has
// been delivered, every refusal of the probes has been heard. It returns
// the tools refused.
func (c *Catalog) probeCalls(ctx context.Context, tools []string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, permissionsWait)
	defer cancel()
	bySubject := make(map[string]string, len(tools))
	for _, t := range tools {
		bySubject[c.subjects.Call(t)] = t
	}
	w := c.feed.watch(c.nc, func(s string) bool { _, ok := bySubject[s]; return ok })
	defer w.close()
	epoch, before := c.epoch(), c.nc.LastError()
	for s := range bySubject {
		m := &nats.Msg{Subject: s, Header: nats.Header{wire.HeaderProbe: []string{"permission"}}}
		if err := c.nc.PublishMsg(m); err != nil {
			return nil, err
		}
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		return nil, err
	}
	if c.epoch() != epoch {
		return nil, errors.New("the connection reconnected during the probe")
	}
	if last := c.nc.LastError(); last != nil && !sameErr(last, before) {
		if err := w.awaitDelivered(ctx, last); err != nil {
			return nil, err
		}
	}
	refused := map[string]bool{}
	for s := range w.refusedSubjects() {
		refused[bySubject[s]] = true
	}
	return refused, nil
}

// errNotPermitted says the user may not ask the server about itself.
var errNotPermitted = errors.New("publish to " + wire.UserInfoSubject + " not permitted")

// askPermissions asks the server which subjects this connection may
// publish to. A refused ask is known at the round trip's end (the server
// reports the violation before it answers the flush), not after a wait.
func (c *Catalog) askPermissions(ctx context.Context) (wire.PublishPermissions, error) {
	ctx, cancel := context.WithTimeout(ctx, permissionsWait)
	defer cancel()
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return wire.PublishPermissions{}, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(wire.UserInfoSubject, inbox, nil); err != nil {
		return wire.PublishPermissions{}, err
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		return wire.PublishPermissions{}, err
	}
	if op, subject, ok := wire.Violation(c.nc.LastError()); ok && op == wire.OpPublish && subject == wire.UserInfoSubject {
		return wire.PublishPermissions{}, errNotPermitted
	}
	m, err := sub.NextMsgWithContext(ctx)
	if errors.Is(err, nats.ErrNoResponders) || (err == nil && m.Header.Get("Status") == "503") {
		return wire.PublishPermissions{}, fmt.Errorf("no one answers %s: the server is older than nats-server 2.10, or has no system account", wire.UserInfoSubject)
	}
	if err != nil {
		return wire.PublishPermissions{}, err
	}
	return wire.ParseUserInfo(m.Data)
}

// visibleEntries keeps of every worker's entry only the tools may allows,
// and only the workers left with one; the cached spec sets are not
// touched.
func visibleEntries(entries map[string]catalogEntry, may func(string) bool) map[string]catalogEntry {
	out := make(map[string]catalogEntry, len(entries))
	for id, e := range entries {
		if tools := visibleSpecs(e.Tools, may); len(tools) > 0 {
			e.Tools = tools
			out[id] = e
		}
	}
	return out
}

// visibleSpecs returns the specs may allows, specs itself when it allows
// them all.
func visibleSpecs(specs []envelope.ToolSpec, may func(string) bool) []envelope.ToolSpec {
	for i, s := range specs {
		if may(s.Name) {
			continue
		}
		out := append(make([]envelope.ToolSpec, 0, len(specs)-1), specs[:i]...)
		for _, s := range specs[i+1:] {
			if may(s.Name) {
				out = append(out, s)
			}
		}
		return out
	}
	return specs
}

// notCallable is Describe's answer for a tool this identity may not call:
// the same whether or not a worker hosts it, so the answer names nothing
// another tenant offers.
func (c *Catalog) notCallable(tool string) error {
	return wire.ForbiddenProblem(c.problems.New, wire.OpPublish, c.subjects.Call(tool),
		fmt.Sprintf("this identity may not call tool %s, so its catalogue does not show it", tool))
}

// registryReadable reports whether a lets this identity read the worker
// registry through the JetStream API; a tenant without it (as in
// deploy/secure) learns so at once instead of waiting for the server's
// refusal to time the read out. With the permissions unknown only a
// refusal already seen on this connection says no (registryRead hears
// the first).
func (c *Catalog) registryReadable(a *access) bool {
	if !a.known {
		return !a.registryRefused
	}
	stream := "KV_" + c.subjects.RegistryBucket()
	return a.perms.MayPublish("$JS.API.STREAM.INFO."+stream) && a.perms.MayPublish("$JS.API.CONSUMER.CREATE."+stream+".x")
}

// registryRead reads the registry (registrySnapshot), ending it as soon
// as the server refuses one of its JetStream API requests: a refused
// request is never answered, and would hold the read until its deadline.
// A refusal is remembered for the connection.
func (c *Catalog) registryRead(ctx context.Context, a *access) (map[string]registered, error) {
	w := c.feed.watch(c.nc, func(s string) bool { return strings.HasPrefix(s, "$JS.API.") })
	defer w.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.hit:
			cancel()
		case <-ctx.Done():
		}
	}()
	reg, err := c.registrySnapshot(ctx)
	if refused := slices.Sorted(maps.Keys(w.refusedSubjects())); len(refused) > 0 {
		c.update(a, func(n *access) { n.registryRefused = true })
		return nil, fmt.Errorf("%w: the server refused %s", errNoJetStreamAPI, refused[0])
	}
	return reg, err
}

// viewEntries keeps of entries the tools this identity may call (see
// decide), with the notes that say how that was learnt; false when some
// tool could not be decided, and so is left out.
func (c *Catalog) viewEntries(ctx context.Context, entries map[string]catalogEntry) (map[string]catalogEntry, []string, bool) {
	var names []string
	for _, e := range entries {
		for _, s := range e.Tools {
			names = append(names, s.Name)
		}
	}
	a, err := c.decide(ctx, names)
	entries = visibleEntries(entries, a.may)
	if a.known {
		return entries, nil, true
	}
	notes := []string{fmt.Sprintf("the server did not say what this identity may call (%s): each tool is listed only once the server accepted a probe publish to its call subject (docs/protocol.md §14.5)", a.why)}
	if n := len(undecided(a, names)); n > 0 {
		notes = append(notes, fmt.Sprintf("%d tools are not listed: whether this identity may call them is not known (%v)", n, err))
		return entries, notes, false
	}
	return entries, notes, true
}

// undecidedProblem is Describe's answer when it could not learn whether
// this identity may call tool.
func (c *Catalog) undecidedProblem(ctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return c.problems.Rebase(envelope.AsProblem(ctx.Err(), envelope.CodeTimeout))
	}
	return c.problems.New(envelope.CodeConnectionLost, fmt.Sprintf(
		"could not learn whether this identity may call tool %s (%v), so its catalogue does not show it", tool, err))
}
