package tasks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// describe asks a worker of tool for its spec, with the reply on the
// service's own inbox: under deploy/secure a worker may publish only on
// reply subjects the server made and on that inbox (<p>.tasks.inbox.>),
// so a request on the connection's _INBOX (a catalogue's Describe) would
// never be answered, and a task of a tool annotated idempotent would
// never be re-run. The reply's last token is random (crypto/rand): every
// pool's workers may publish on the inbox, and only the worker asked may
// be able to answer.
func (s *Service) describe(ctx context.Context, tool string) (envelope.ToolSpec, error) {
	var spec envelope.ToolSpec
	if err := envelope.ValidateToolName(tool); err != nil {
		return spec, err
	}
	reply := s.names.base + ".inbox.describe." + rand.Text()
	sub, err := s.nc.SubscribeSync(reply)
	if err != nil {
		return spec, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest(wire.Subjects{Prefix: s.cfg.Prefix}.Describe(tool), reply, nil); err != nil {
		return spec, err
	}
	msg, err := sub.NextMsgWithContext(ctx)
	switch {
	case err != nil:
		return spec, err
	case len(msg.Data) == 0:
		return spec, nats.ErrNoResponders // the server's 503: no worker hosts it
	}
	if err := json.Unmarshal(msg.Data, &spec); err != nil {
		return spec, errors.New("malformed spec from worker: " + err.Error())
	}
	return spec, nil
}
