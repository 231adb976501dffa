package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolmesh/toolmesh/internal/redact"
)

// Grant is what a one-time interactive login leaves for later use: the
// client the authorization server knows (pre-registered or registered
// then), its token endpoint and the token with its refresh token, so a
// worker can get new access tokens without a person. It is a secret: it
// lives in a file only its owner can read and is never logged.
type Grant struct {
	// Resource is the MCP server the grant is for (its URL).
	Resource string `json:"resource"`
	// ClientID and ClientSecret are the client the tokens were issued to
	// (the secret only for a confidential client).
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenURL is the authorization server's token endpoint and AuthStyle
	// how the client authenticates there (oauth2.AuthStyle).
	TokenURL  string           `json:"token_url"`
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	// Scopes are the scopes that were asked for.
	Scopes []string      `json:"scopes,omitempty"`
	Token  *oauth2.Token `json:"token"`
}

// String describes the grant without its secrets, so a grant printed by
// mistake (fmt's %v and %+v) shows none.
func (g Grant) String() string {
	refresh := "no refresh token"
	if g.Token != nil && g.Token.RefreshToken != "" {
		refresh = "a refresh token"
	}
	return fmt.Sprintf("login for %s (client %s, %s)", g.Resource, g.ClientID, refresh)
}

// GoString is String, for %#v.
func (g Grant) GoString() string { return g.String() }

// LogValue is String, for slog.
func (g Grant) LogValue() slog.Value { return slog.StringValue(g.String()) }

// secrets are the grant's values no text may show.
func (g *Grant) secrets() []string {
	s := []string{g.ClientSecret}
	if g.Token != nil {
		s = append(s, g.Token.AccessToken, g.Token.RefreshToken)
	}
	return s
}

// GrantFile is where a Grant is kept: a JSON file of mode 0600 in a
// directory of mode 0700. A file others can read is refused, as ssh
// refuses such a key.
type GrantFile struct {
	Path string
	mu   sync.Mutex
}

// DefaultGrantPath is the file of the grant named name in the user's
// state directory: $XDG_STATE_HOME/toolmesh/oauth/<name>.json, else
// ~/.local/state/… on Unix and the user config directory elsewhere.
func DefaultGrantPath(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("grant name %q: want a plain name", name)
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" && runtime.GOOS != "windows" && runtime.GOOS != "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	return filepath.Join(dir, "toolmesh", "oauth", name+".json"), nil
}

// ErrNoGrant is returned by Load when no login was stored.
var ErrNoGrant = errors.New("no stored login")

// Load reads the grant. It wraps ErrNoGrant when the file does not exist.
func (f *GrantFile) Load() (*Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoGrant, f.Path)
	}
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v): it holds a refresh token; chmod 600 it or log in again", f.Path, st.Mode().Perm())
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, err
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil || g.Token == nil || g.TokenURL == "" || g.ClientID == "" {
		// The error of a decoder can quote the file; the file is secret.
		return nil, fmt.Errorf("%s is not a stored login; log in again", f.Path)
	}
	return &g, nil
}

// Save replaces the grant atomically: a new 0600 file in the same
// directory, renamed over the old one, so a crash never leaves half a
// token and no reader ever sees a wider mode.
func (f *GrantFile) Save(g *Grant) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".grant-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path)
}

// savingSource hands out the tokens of src and keeps the grant file in
// step: every new token (a refresh may rotate the refresh token too) is
// saved before it is used. When src fails (a refused refresh), the file
// is read again: a login made since (toolmesh login while the worker
// runs) is taken up without a restart. Its errors never show the
// grant's secrets.
type savingSource struct {
	mu    sync.Mutex
	src   oauth2.TokenSource
	file  *GrantFile
	grant Grant // Token is the last saved
	// source makes the token source of a grant (its client, its token
	// endpoint, the HTTP client).
	source func(*Grant) oauth2.TokenSource
}

// newSavingSource is the saving source of g, whose Token was just saved
// (or loaded).
func newSavingSource(g *Grant, file *GrantFile, source func(*Grant) oauth2.TokenSource) *savingSource {
	return &savingSource{src: source(g), file: file, grant: *g, source: source}
}

// Token returns a valid token, refreshing and saving it when needed.
func (s *savingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.src.Token()
	if err != nil && s.reload() {
		t, err = s.src.Token()
	}
	if err != nil {
		return nil, errors.New(redact.New(s.grant.secrets()...).String(
			fmt.Sprintf("the stored login could not get a token (%v); run toolmesh login again", err)))
	}
	if s.grant.Token == nil || t.AccessToken != s.grant.Token.AccessToken || t.RefreshToken != s.grant.Token.RefreshToken {
		g := s.grant
		g.Token = t
		if err := s.file.Save(&g); err != nil {
			return nil, fmt.Errorf("saving the refreshed login to %s: %v", s.file.Path, err)
		}
		s.grant = g
	}
	return t, nil
}

// reload takes up the grant in the file when it is another login for the
// same server; it reports whether it did.
func (s *savingSource) reload() bool {
	g, err := s.file.Load()
	if err != nil || g.Resource != s.grant.Resource || s.grant.Token == nil ||
		(g.Token.RefreshToken == s.grant.Token.RefreshToken && g.Token.AccessToken == s.grant.Token.AccessToken) {
		return false
	}
	s.grant, s.src = *g, s.source(g)
	return true
}

// expire makes the next Token refresh, when the grant has a refresh
// token; it reports whether it does.
func (s *savingSource) expire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grant.Token == nil || s.grant.Token.RefreshToken == "" {
		return false
	}
	stale := s.grant
	tok := *s.grant.Token
	tok.Expiry = time.Unix(1, 0)
	stale.Token = &tok
	s.src = s.source(&stale)
	return true
}
