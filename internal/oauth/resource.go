package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnownPath is where RFC 9728 puts protected-resource metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Resource is one protected resource (an MCP endpoint): the tokens it
// takes and the metadata it publishes.
type Resource struct {
	// Validator checks the tokens.
	Validator *Validator
	// URI is the resource's identifier: the endpoint's public URL, which
	// tokens must name in aud (RFC 8707) and the metadata names as
	// "resource".
	URI string
	// Scopes are required of every token (403 insufficient_scope when
	// one is missing); none by default.
	Scopes []string
	// Name is the human-readable resource_name in the metadata.
	Name string
}

// MetadataURL is where the metadata of r is served (RFC 9728 §3.1: the
// well-known path inserted between the URI's host and its path).
func (r *Resource) MetadataURL() string {
	u, err := url.Parse(r.URI)
	if err != nil {
		return r.URI
	}
	u.Path = r.MetadataPath()
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	return u.String()
}

// MetadataPath is the path part of MetadataURL.
func (r *Resource) MetadataPath() string {
	u, err := url.Parse(r.URI)
	if err != nil {
		return WellKnownPath
	}
	return WellKnownPath + strings.TrimRight(u.Path, "/")
}

// MetadataHandler serves the RFC 9728 document: the resource, its
// authorization server (the issuer), its scopes and that bearers come in
// the Authorization header.
func (r *Resource) MetadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               r.URI,
		AuthorizationServers:   []string{r.Validator.Issuer()},
		ScopesSupported:        r.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           r.Name,
	})
}

type identityKey struct{}

// identityValue is what Require puts in a request's context.
type identityValue struct {
	id    *Identity
	token string
}

// IdentityFrom returns the person a request's bearer named and the token
// itself (nil and "" outside Require).
func IdentityFrom(ctx context.Context) (*Identity, string) {
	v, _ := ctx.Value(identityKey{}).(identityValue)
	return v.id, v.token
}

// WithIdentity returns ctx carrying id and its token, as Require leaves
// them (for handlers served behind another authenticator, and tests).
func WithIdentity(ctx context.Context, id *Identity, token string) context.Context {
	return context.WithValue(ctx, identityKey{}, identityValue{id: id, token: token})
}

// Require lets through only requests with a valid bearer for r: 401 with
// WWW-Authenticate naming the metadata when the token is missing or
// invalid, 403 insufficient_scope when it lacks a required scope, 503
// when the issuer cannot be reached to learn a new key. The request goes
// on with the identity in its context (IdentityFrom) and in the MCP SDK's
// TokenInfo (whose UserID binds a session to its person), and without its
// Authorization header: the token is for this resource, so it is never
// passed on to tools.
func (r *Resource) Require(next http.Handler) http.Handler {
	strip := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
	sdk := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id, _ := IdentityFrom(ctx)
		return &auth.TokenInfo{UserID: id.Key(), Scopes: id.Scopes, Expiration: id.Expiry}, nil
	}, nil)(strip)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req.Header.Get("Authorization"))
		if !ok {
			r.challenge(w, http.StatusUnauthorized, "", "a bearer token is required")
			return
		}
		id, err := r.Validator.Validate(req.Context(), token)
		if errors.Is(err, ErrInvalidToken) {
			r.challenge(w, http.StatusUnauthorized, "invalid_token", err.Error())
			return
		}
		if err != nil {
			http.Error(w, "Service Unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		for _, s := range r.Scopes {
			if !slices.Contains(id.Scopes, s) {
				r.challenge(w, http.StatusForbidden, "insufficient_scope", "the token lacks scope "+s)
				return
			}
		}
		sdk.ServeHTTP(w, req.WithContext(WithIdentity(req.Context(), id, token)))
	})
}

// challenge answers code with the RFC 6750 / RFC 9728 WWW-Authenticate.
func (r *Resource) challenge(w http.ResponseWriter, code int, errCode, msg string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", r.MetadataURL())}
	if errCode != "" {
		params = append(params, fmt.Sprintf("error=%q", errCode))
	}
	if len(r.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(r.Scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, http.StatusText(code)+": "+msg, code)
}

// bearerToken reads "Bearer <token>" (scheme case-insensitive).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != "" && !strings.ContainsAny(token, " \t")
}
