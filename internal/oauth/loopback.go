package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// CallbackPath is the path of the loopback redirect URI.
const CallbackPath = "/callback"

// Loopback receives the authorization response of a native app's login
// (RFC 8252 §7.3): a one-purpose HTTP server on 127.0.0.1 at a port the
// system picks, whose redirect URI the authorization server sends the
// person's browser back to with the code.
type Loopback struct {
	ln      net.Listener
	srv     *http.Server
	results chan url.Values
}

// ListenLoopback starts the receiver; Close stops it.
func ListenLoopback() (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback redirect: %v", err)
	}
	l := &Loopback{ln: ln, results: make(chan url.Values, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CallbackPath, l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

// RedirectURL is the redirect URI to register and send: an IP literal,
// not localhost, as RFC 8252 §8.3 recommends.
func (l *Loopback) RedirectURL() string {
	return "http://" + l.ln.Addr().String() + CallbackPath
}

// Close stops the receiver.
func (l *Loopback) Close() error { return l.srv.Close() }

// callback takes one authorization response and tells the browser the
// login is done; the code is never shown or logged.
func (l *Loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	select {
	case l.results <- q:
	default:
		http.Error(w, "toolmesh is not waiting for a login", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if q.Get("error") != "" {
		fmt.Fprint(w, "<!doctype html><title>toolmesh login</title><p>The login was refused. You can close this window.")
		return
	}
	fmt.Fprint(w, "<!doctype html><title>toolmesh login</title><p>Logged in. You can close this window.")
}

// Fetcher is the authorization step of the code flow: open shows the
// authorization URL to the person (a browser, or a message to open it),
// then the fetcher waits for the redirect carrying the same state. A
// response with another state (a stale tab, another program) is skipped.
func (l *Loopback) Fetcher(open func(ctx context.Context, authURL string) error) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		want := u.Query().Get("state")
		if err := open(ctx, args.URL); err != nil {
			return nil, err
		}
		for {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the browser to come back from the login: %w", ctx.Err())
			case q := <-l.results:
				if q.Get("state") != want {
					continue
				}
				if e := q.Get("error"); e != "" {
					return nil, authorizationError(q)
				}
				return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
			}
		}
	}
}

// authorizationError is the error response of the authorization endpoint
// (RFC 6749 §4.1.2.1).
func authorizationError(q url.Values) error {
	msg := "the authorization server refused the login: " + q.Get("error")
	if d := q.Get("error_description"); d != "" {
		msg += ": " + d
	}
	return errors.New(msg)
}
