package oauth

import (
	"context"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Validate checks a bearer JWT: its signature by a key of the issuer's
// JWKS under the algorithm that key declares (an unknown key id fetches
// the JWKS again, at most once per RefetchEvery, so rotated keys are
// picked up), iss, aud (one of the audiences), exp (required), nbf and
// iat. A refused token's error wraps ErrInvalidToken.
func (v *Validator) Validate(ctx context.Context, token string) (*Identity, error) {
	tok, key, err := v.verifiedKey(ctx, token)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	all := map[string]any{}
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: the token has no exp", ErrInvalidToken)
	}
	if std.Subject == "" {
		return nil, fmt.Errorf("%w: the token has no sub", ErrInvalidToken)
	}
	exp := jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: v.cfg.Audiences, Time: time.Now()}
	if err := std.ValidateWithLeeway(exp, v.cfg.Leeway); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	return &Identity{Issuer: std.Issuer, Subject: std.Subject, Scopes: scopesOf(all),
		Expiry: std.Expiry.Time(), Claims: all}, nil
}

// verifiedKey parses token under the algorithms the JWKS keys declare and
// finds the key that signed it, fetching the JWKS again (rate-limited)
// when the token names a key id not held.
func (v *Validator) verifiedKey(ctx context.Context, token string) (*jwt.JSONWebToken, jose.JSONWebKey, error) {
	for attempt := 0; ; attempt++ {
		keys, algs := v.snapshot()
		tok, err := jwt.ParseSigned(token, algs)
		if err != nil && attempt == 0 && v.refetchAllowed() {
			// A rotation may have brought a key of another algorithm.
			if rerr := v.refresh(ctx); rerr != nil {
				return nil, jose.JSONWebKey{}, rerr
			}
			continue
		}
		if err != nil {
			return nil, jose.JSONWebKey{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
		}
		if len(tok.Headers) != 1 {
			return nil, jose.JSONWebKey{}, fmt.Errorf("%w: want one signature", ErrInvalidToken)
		}
		h := tok.Headers[0]
		if key, ok := keyFor(keys, h); ok {
			return tok, key, nil
		}
		if attempt > 0 || !v.refetchAllowed() {
			return nil, jose.JSONWebKey{}, fmt.Errorf("%w: signed by key %q, which the issuer does not publish", ErrInvalidToken, h.KeyID)
		}
		if err := v.refresh(ctx); err != nil {
			return nil, jose.JSONWebKey{}, err
		}
	}
}

// keyFor is the key the header names, used only with the algorithm it
// declares. A header without kid matches when exactly one key fits.
func keyFor(set jose.JSONWebKeySet, h jose.Header) (jose.JSONWebKey, bool) {
	var found []jose.JSONWebKey
	for _, k := range set.Keys {
		if (h.KeyID == "" || k.KeyID == h.KeyID) && keyAlgorithm(k) == jose.SignatureAlgorithm(h.Algorithm) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return jose.JSONWebKey{}, false
	}
	return found[0], true
}

// scopesOf reads "scope" (RFC 8693/9068: space-separated) or "scp" (an
// array, as some providers send).
func scopesOf(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	if arr, ok := claims["scp"].([]any); ok {
		for _, x := range arr {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
