package authcallout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/toolmesh/toolmesh/internal/identity"
	"github.com/toolmesh/toolmesh/internal/oauth"
)

// Subject is where the server sends authorization requests.
const Subject = "$SYS.REQ.USER.AUTH"

// Config configures a Service.
type Config struct {
	// Validator checks the presented OpenID tokens.
	Validator *oauth.Validator
	// Policy maps people to mesh identities.
	Policy *identity.Policy
	// Issuer is the account key pair named as auth_callout's issuer; it
	// signs the responses and the user JWTs.
	Issuer nkeys.KeyPair
	// XKey, when set, is the curve key pair named as auth_callout's xkey:
	// requests arrive encrypted to it and responses go back encrypted.
	XKey nkeys.KeyPair
	// Logger receives one line per decision (default slog.Default()).
	Logger *slog.Logger
}

// Service answers auth callout requests.
type Service struct {
	cfg Config
}

// New checks cfg and makes a service.
func New(cfg Config) (*Service, error) {
	if cfg.Validator == nil || cfg.Policy == nil || cfg.Issuer == nil {
		return nil, errors.New("authcallout: Validator, Policy and Issuer are required")
	}
	if pub, err := cfg.Issuer.PublicKey(); err != nil || !nkeys.IsValidPublicAccountKey(pub) {
		return nil, errors.New("authcallout: the issuer must be an account key pair (seed SA…)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{cfg: cfg}, nil
}

// Serve answers requests on nc (a user auth_users lets bypass the
// callout, in the callout's account) until ctx ends. Several services may
// serve together: they form a queue group.
func (s *Service) Serve(ctx context.Context, nc *nats.Conn) error {
	sub, err := nc.QueueSubscribe(Subject, "toolmesh-authcallout", func(m *nats.Msg) {
		resp, err := s.Handle(ctx, m.Data, m.Header.Get("Nats-Server-Xkey"))
		if err != nil {
			s.cfg.Logger.Warn("authcallout: cannot answer", "err", err)
			return
		}
		if err := m.Respond(resp); err != nil {
			s.cfg.Logger.Warn("authcallout: respond", "err", err)
		}
	})
	if err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}

// Handle answers one request (a JWT, encrypted when serverXKey is set)
// with a response JWT (encrypted likewise) that either carries the
// person's user JWT or says why they may not connect.
func (s *Service) Handle(ctx context.Context, data []byte, serverXKey string) ([]byte, error) {
	if serverXKey != "" {
		if s.cfg.XKey == nil {
			return nil, errors.New("an encrypted request, but no xkey is configured")
		}
		plain, err := s.cfg.XKey.Open(data, serverXKey)
		if err != nil {
			return nil, fmt.Errorf("decrypt request: %w", err)
		}
		data = plain
	}
	req, err := jwt.DecodeAuthorizationRequestClaims(string(data))
	if err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	userJWT, reason := s.authorize(ctx, &req.AuthorizationRequest)
	rc := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	rc.Audience = req.Server.ID
	rc.Jwt, rc.Error = userJWT, reason
	tok, err := rc.Encode(s.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	if serverXKey != "" {
		return s.cfg.XKey.Seal([]byte(tok), serverXKey)
	}
	return []byte(tok), nil
}

// authorize is the user JWT for the request's token, or why there is none.
func (s *Service) authorize(ctx context.Context, req *jwt.AuthorizationRequest) (userJWT, reason string) {
	log := s.cfg.Logger.With("client", req.ClientInformation.Host, "name", req.ConnectOptions.Name)
	if req.ConnectOptions.Token == "" {
		log.Info("authcallout: refused", "reason", "no token")
		return "", "an OpenID token is required as the connection's token"
	}
	id, err := s.cfg.Validator.Validate(ctx, req.ConnectOptions.Token)
	if err != nil {
		log.Info("authcallout: refused", "reason", err)
		return "", "the token is not valid"
	}
	g, ok := s.cfg.Policy.Map(id)
	if !ok {
		log.Info("authcallout: refused", "sub", id.Subject, "reason", "no policy rule matches")
		return "", "no policy rule admits this person"
	}
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Name = g.User
	uc.Audience = g.Account
	uc.Expires = id.Expiry.Unix()
	uc.Permissions = g.Permissions(s.cfg.Policy.Prefix)
	tok, err := uc.Encode(s.cfg.Issuer)
	if err != nil {
		log.Warn("authcallout: encode user", "err", err)
		return "", "internal error"
	}
	log.Info("authcallout: admitted", "sub", id.Subject, "account", g.Account, "user", g.User, "namespaces", g.Namespaces)
	return tok, ""
}
