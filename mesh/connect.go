package mesh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultURL is where a mesh is looked for when neither a flag nor $NATS_URL says otherwise.
const DefaultURL = "nats://127.0.0.1:4222"

// ConnectOptions are the usual ways to reach and authenticate to NATS.
type ConnectOptions struct {
	// URL is one or more comma-separated server URLs (default DefaultURL).
	URL string
	// Name is the connection name shown by the server's monitoring.
	Name string
	// Creds is a JWT credentials file; NKeySeed an nkey seed file.
	Creds    string
	NKeySeed string
	Token    string
	User     string
	Password string
	// TLSCA, TLSCert and TLSKey are PEM files for TLS.
	TLSCA, TLSCert, TLSKey string
	// MaxReconnects is how many reconnect attempts an outage may take
	// before the connection closes for good: 0 means retry forever (the
	// default), N > 0 gives up after N. ReconnectWait is the pause between
	// attempts (default 2s).
	MaxReconnects int
	ReconnectWait time.Duration
	// Logger, when set, receives every disconnect, reconnect and close.
	Logger *slog.Logger
	// Timeout bounds the initial connection (default 5s).
	Timeout time.Duration
}

// natsOptions turns the options into nats.go options.
func (o ConnectOptions) natsOptions() ([]nats.Option, error) {
	opts := []nats.Option{nats.Name(o.Name)}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKeySeed != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("nkey seed %s: %w", o.NKeySeed, err)
		}
		opts = append(opts, opt)
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("TLS client certificate and key go together: give both or neither")
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	maxRe := o.MaxReconnects
	if maxRe == 0 {
		maxRe = reconnectForever
	}
	if o.Logger != nil {
		opts = append(opts, connectionLogging(o.Logger)...)
	}
	opts = append(opts, nats.MaxReconnects(maxRe))
	if o.ReconnectWait > 0 {
		opts = append(opts, nats.ReconnectWait(o.ReconnectWait))
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	opts = append(opts, nats.Timeout(timeout))
	return opts, nil
}

// URLOrDefault returns o.URL, else $NATS_URL, else DefaultURL.
func (o ConnectOptions) URLOrDefault() string {
	if o.URL != "" {
		return o.URL
	}
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Connect dials NATS with the options, and extra after them (a token
// handler, say), giving up when ctx ends.
func Connect(ctx context.Context, o ConnectOptions, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := o.natsOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, extra...)
	type result struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(o.URLOrDefault(), opts...)
		ch <- result{nc, err}
	}()
	select {
	case r := <-ch:
		return r.nc, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
