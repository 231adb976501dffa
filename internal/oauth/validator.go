package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Config configures a Validator.
type Config struct {
	// Issuer is the OpenID provider's issuer URL. Its discovery document
	// (Issuer + "/.well-known/openid-configuration") must name exactly
	// this issuer, and every token's iss must equal it.
	Issuer string
	// Audiences are the accepted aud values: a token is accepted when its
	// aud holds one of them (RFC 8707: the resource's own URI). Required.
	Audiences []string
	// Leeway is the clock skew tolerated on exp, nbf and iat (default 30s).
	Leeway time.Duration
	// RefetchEvery bounds how often a token signed with an unknown key id
	// makes the JWKS be fetched again (default 30s), so forged key ids
	// cannot make the validator hammer the provider.
	RefetchEvery time.Duration
	// HTTPClient fetches discovery and JWKS (default: a client with a 10s
	// timeout).
	HTTPClient *http.Client
}

// Identity is what a validated token says about who presents it.
type Identity struct {
	// Issuer and Subject name the person: together they are unique.
	Issuer, Subject string
	// Scopes are the token's scopes ("scope", space-separated, or "scp").
	Scopes []string
	// Expiry is when the token stops being valid.
	Expiry time.Time
	// Claims are all the token's claims, for a policy to match on.
	Claims map[string]any
}

// Key is the person's stable key: issuer and subject.
func (id *Identity) Key() string { return id.Issuer + "|" + id.Subject }

// ErrInvalidToken wraps every reason a token is refused, so callers can
// answer 401 for it and something else for a provider that cannot be
// reached.
var ErrInvalidToken = errors.New("invalid token")

// Validator checks bearer JWTs of one issuer for a set of audiences.
type Validator struct {
	cfg     Config
	jwksURI string
	client  *http.Client

	mu        sync.Mutex
	keys      jose.JSONWebKeySet
	algs      []jose.SignatureAlgorithm
	lastFetch time.Time
}

// discovery is the part of an OpenID discovery document used here.
type discovery struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// NewValidator reads the issuer's discovery document and JWKS; it fails
// when either cannot be read or the document names another issuer.
func NewValidator(ctx context.Context, cfg Config) (*Validator, error) {
	if cfg.Issuer == "" || len(cfg.Audiences) == 0 {
		return nil, errors.New("oauth: an issuer and at least one audience are required")
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.RefetchEvery <= 0 {
		cfg.RefetchEvery = 30 * time.Second
	}
	v := &Validator{cfg: cfg, client: cfg.HTTPClient}
	if v.client == nil {
		v.client = &http.Client{Timeout: 10 * time.Second}
	}
	var doc discovery
	if err := v.getJSON(ctx, strings.TrimRight(cfg.Issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
		return nil, fmt.Errorf("oauth: discovery of %s: %w", cfg.Issuer, err)
	}
	if doc.Issuer != cfg.Issuer {
		return nil, fmt.Errorf("oauth: the discovery document of %s names issuer %q", cfg.Issuer, doc.Issuer)
	}
	if doc.JWKSURI == "" {
		return nil, fmt.Errorf("oauth: the discovery document of %s has no jwks_uri", cfg.Issuer)
	}
	v.jwksURI = doc.JWKSURI
	if err := v.refresh(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// Issuer is the issuer tokens must come from.
func (v *Validator) Issuer() string { return v.cfg.Issuer }

// getJSON GETs url and decodes its JSON body (at most 1 MiB) into out.
func (v *Validator) getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// refresh fetches the JWKS and derives the accepted algorithms from it.
func (v *Validator) refresh(ctx context.Context) error {
	var set jose.JSONWebKeySet
	if err := v.getJSON(ctx, v.jwksURI, &set); err != nil {
		return fmt.Errorf("oauth: JWKS of %s: %w", v.cfg.Issuer, err)
	}
	var keys []jose.JSONWebKey
	var algs []jose.SignatureAlgorithm
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if alg := keyAlgorithm(k); alg != "" {
			keys = append(keys, k)
			algs = appendNew(algs, alg)
		}
	}
	v.mu.Lock()
	v.keys, v.algs, v.lastFetch = jose.JSONWebKeySet{Keys: keys}, algs, time.Now()
	v.mu.Unlock()
	return nil
}

// keyAlgorithm is the one signature algorithm a JWKS key is used with:
// the one it declares, or, when it declares none, its type's usual one.
// Symmetric keys and "none" are never accepted.
func keyAlgorithm(k jose.JSONWebKey) jose.SignatureAlgorithm {
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		switch a := jose.SignatureAlgorithm(k.Algorithm); a {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return a
		case "":
			return jose.RS256
		}
	case *ecdsa.PublicKey:
		want := map[string]jose.SignatureAlgorithm{"P-256": jose.ES256, "P-384": jose.ES384, "P-521": jose.ES512}[key.Curve.Params().Name]
		if a := jose.SignatureAlgorithm(k.Algorithm); a == "" || a == want {
			return want
		}
	case ed25519.PublicKey:
		if a := jose.SignatureAlgorithm(k.Algorithm); a == "" || a == jose.EdDSA {
			return jose.EdDSA
		}
	}
	return ""
}

func appendNew(algs []jose.SignatureAlgorithm, a jose.SignatureAlgorithm) []jose.SignatureAlgorithm {
	for _, b := range algs {
		if a == b {
			return algs
		}
	}
	return append(algs, a)
}

// snapshot returns the keys and algorithms now held.
func (v *Validator) snapshot() (jose.JSONWebKeySet, []jose.SignatureAlgorithm) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.keys, v.algs
}

// refetchAllowed says whether an unknown key id may fetch the JWKS now,
// and if so claims the slot.
func (v *Validator) refetchAllowed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.lastFetch) < v.cfg.RefetchEvery {
		return false
	}
	v.lastFetch = time.Now()
	return true
}
