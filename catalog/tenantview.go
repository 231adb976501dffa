package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// A tenant's view: the catalogue, search, Describe and Watch show only the
// tools this NATS identity may call. Who may call what has one
// source of truth, the publish permissions the NATS server enforces on the
// connection's user; the catalogue asks the server for them ($SYS.REQ.USER.INFO,
// which answers every client about itself) and keeps a tool exactly when
// the server would accept a publish to its call subject.

// permissionsWait bounds asking the server for this identity's permissions.
const permissionsWait = 2 * time.Second

// permView caches the connection's publish permissions for the life of
// one connection: a reconnect (perhaps to a server with other
// permissions) asks again.
type permView struct {
	mu    sync.Mutex
	at    uint64 // the connection's reconnect count+1 when asked; 0: never asked
	perms wire.PublishPermissions
}

// callable returns whether this identity may call a tool. When
// the server cannot say (no system account, or the user may not ask) every
// tool is kept: the view is a convenience over the server's refusal, which
// still ends any call it does not permit with forbidden.
func (c *Catalog) callable(ctx context.Context) func(tool string) bool {
	return c.callableBy(c.permissions(ctx))
}

// callableBy is callable for the permissions perms.
func (c *Catalog) callableBy(perms wire.PublishPermissions) func(tool string) bool {
	if perms.Unrestricted {
		return func(string) bool { return true }
	}
	return func(tool string) bool { return perms.MayPublish(c.subjects.Call(tool)) }
}

// permissions returns the cached publish permissions, asking the server
// once per connection.
func (c *Catalog) permissions(ctx context.Context) wire.PublishPermissions {
	c.perms.mu.Lock()
	defer c.perms.mu.Unlock()
	now := c.nc.Stats().Reconnects
	if c.perms.at == now+1 { // +1: the zero value means never asked
		return c.perms.perms
	}
	perms, err := c.askPermissions(ctx)
	if err != nil {
		c.log.Debug("the server did not say what this identity may call; every tool is listed", "err", err)
		perms = wire.PublishPermissions{Unrestricted: true}
	}
	if ctx.Err() == nil {
		c.perms.at, c.perms.perms = now+1, perms
	}
	return perms
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
	if err != nil {
		return wire.PublishPermissions{}, err
	}
	if m.Header.Get("Status") == "503" {
		return wire.PublishPermissions{}, nats.ErrNoResponders
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
	return wire.ForbiddenProblem(c.problems, wire.OpPublish, c.subjects.Call(tool),
		fmt.Sprintf("this identity may not call tool %s, so its catalogue does not show it", tool))
}

// registryReadable reports whether perms let this identity read the
// worker registry through the JetStream API; a tenant without it (as in
// deploy/secure) learns so at once instead of waiting for the server's
// refusal to time the read out.
func (c *Catalog) registryReadable(perms wire.PublishPermissions) bool {
	stream := "KV_" + c.subjects.RegistryBucket()
	return perms.MayPublish("$JS.API.STREAM.INFO."+stream) && perms.MayPublish("$JS.API.CONSUMER.CREATE."+stream+".x")
}
