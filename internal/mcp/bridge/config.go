package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/configkeys"
	"github.com/toolmesh/toolmesh/internal/sandbox"
)

// ServerConfig is one tools-file entry's `binding.mcp`: either a command
// to run as a stdio MCP server or the URL of a streamable HTTP one. It is
// worker-local configuration: env and headers may hold secrets and are
// never served in discovery answers or logged.
type ServerConfig struct {
	// Command and Args start a stdio server (no shell is involved).
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Env is added to the inherited variables of the server process.
	Env map[string]string `yaml:"env"`
	// URL is a streamable HTTP endpoint; Headers go with every request.
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// OAuth, for a url server that requires OAuth (the MCP authorization
	// spec), is the bridge's client: a pre-registered confidential client
	// that gets its tokens by the client-credentials grant from the
	// authorization server the server's protected-resource metadata
	// names, or (login: true) the grant a person gave once with toolmesh
	// login, whose refresh token the worker keeps and uses.
	OAuth *OAuthClient `yaml:"oauth"`
	// Skip names the server's tools (by their MCP names) the bridge does
	// not host. A tool the mesh cannot host fails the worker's start
	// unless it is listed here.
	Skip []string `yaml:"skip"`
	// ClientCapabilities lists the client capabilities the bridge declares
	// to the server: "elicitation" (a server's elicitation/create becomes
	// a question of the call it belongs to) and "sampling"
	// (sampling/createMessage becomes a sampling question). A mesh
	// caller answers questions only when it says so call by call, so
	// none is declared unless listed here: a server then does what it
	// does for a client without them, as it would for the caller
	// directly. Roots are never declared: the mesh has none to give.
	ClientCapabilities []string `yaml:"client_capabilities"`
	// Protocol is the MCP revision the bridge speaks with the server:
	// "2025-11-25" (the default: one long session, the server may send
	// requests mid-call) or "2026-07-28" (stateless requests: the server
	// asks by answering input_required, SEP-2322, and the bridge puts its
	// input requests to the mesh caller as one question per round).
	Protocol string `yaml:"protocol"`
}

// OAuthClient is the bridge's OAuth client of the remote server's
// authorization server. Without Login it is a confidential client using
// the client-credentials grant: set ClientID and exactly one of
// ClientSecret and ClientSecretEnv. With Login a person authorizes it
// once (toolmesh login: authorization code with PKCE); ClientID is then
// a pre-registered client (public, or confidential with a secret), or
// empty to register one dynamically at login.
type OAuthClient struct {
	ClientID string `yaml:"client_id"`
	// Login: a person authorizes the client with toolmesh login, and the
	// worker uses the stored grant, refreshing it.
	Login bool `yaml:"login"`
	// TokenFile is where the login is kept (mode 0600); by default
	// toolmesh/oauth/<namespace>.json in the user's state directory.
	TokenFile string `yaml:"token_file"`
	// ClientMetadataURL is the client's ID metadata document (an https
	// URL), its client_id where the authorization server supports that.
	ClientMetadataURL string `yaml:"client_metadata_url"`
	// Scopes are asked for at login besides those the server names: the
	// scopes its tool calls step up to, so one login covers them.
	Scopes []string `yaml:"scopes"`
	// ClientSecret is the secret itself (the tools file is worker-local).
	ClientSecret string `yaml:"client_secret"`
	// ClientSecretEnv names the worker's environment variable holding it.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// Issuer, when set, is the authorization server the client is
	// registered with: a server naming another is refused.
	Issuer string `yaml:"issuer"`
}

// secret is the client secret, from the file or the environment.
func (o *OAuthClient) secret() string {
	if o.ClientSecretEnv != "" {
		return os.Getenv(o.ClientSecretEnv)
	}
	return o.ClientSecret
}

// check refuses an incomplete client or one that would clash with a
// static Authorization header.
func (o *OAuthClient) check(headers map[string]string) error {
	switch {
	case o.Login && o.ClientSecret != "" && o.ClientSecretEnv != "":
		return fmt.Errorf("field binding.mcp.oauth: set at most one of client_secret and client_secret_env")
	case !o.Login && (o.TokenFile != "" || o.ClientMetadataURL != "" || len(o.Scopes) > 0):
		return fmt.Errorf("field binding.mcp.oauth: token_file, client_metadata_url and scopes need login: true")
	case !o.Login && (o.ClientID == "" || (o.ClientSecret == "") == (o.ClientSecretEnv == "")):
		return fmt.Errorf("field binding.mcp.oauth: set client_id and one of client_secret and client_secret_env (or login: true)")
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return fmt.Errorf("field binding.mcp.oauth.client_metadata_url: want an https URL with a path")
		}
	}
	if o.ClientSecretEnv != "" && os.Getenv(o.ClientSecretEnv) == "" {
		return fmt.Errorf("field binding.mcp.oauth.client_secret_env: %s is empty or unset", o.ClientSecretEnv)
	}
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			return fmt.Errorf("field binding.mcp: oauth and an Authorization header exclude each other")
		}
	}
	return nil
}

// The client capabilities a binding may list (ServerConfig.ClientCapabilities).
const (
	capElicitation = "elicitation"
	capSampling    = "sampling"
)

// Entry is one MCP server bound in a tools file: its tools appear on the
// mesh as <Namespace>.<tool>.
type Entry struct {
	Namespace string
	Server    ServerConfig
	// InheritEnv lists the worker's variables the server process inherits.
	InheritEnv []string
	// Sandbox confines a stdio server (the entry's sandbox block, or the
	// file's default); nil runs it with the worker's rights.
	Sandbox *sandbox.Policy
}

// quotedValue matches the values yaml quotes in its decoding errors.
var quotedValue = regexp.MustCompile("`[^`]*`")

// defaultInheritEnv matches the CLI binding's default: enough to find
// programs (npx needs PATH and HOME) and speak the locale, nothing secret.
var defaultInheritEnv = []string{"PATH", "HOME", "LANG", "TZ"}

// LoadFile reads the MCP-bound entries of a tools file (the entries whose
// binding is `mcp`; the CLI loader reads the rest). Errors are
// invalid_config Problems naming the file, the entry and the field.
func LoadFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "tools file: %v", err)
	}
	entries, err := Parse(data)
	if err != nil {
		return nil, envelope.Problemf(envelope.CodeInvalidConfig, "%s: %v", path, err)
	}
	return entries, nil
}

// toolsDoc is the part of a tools file the bridge reads.
type toolsDoc struct {
	InheritEnv []string     `yaml:"inherit_env"`
	Sandbox    yaml.Node    `yaml:"sandbox"`
	Tools      []toolsEntry `yaml:"tools"`
}

// toolsEntry is one entry of a tools file, as far as the bridge reads it.
type toolsEntry struct {
	Name      string    `yaml:"name"`
	Namespace string    `yaml:"namespace"`
	Sandbox   yaml.Node `yaml:"sandbox"`
	Binding   struct {
		CLI yaml.Node `yaml:"cli"`
		MCP yaml.Node `yaml:"mcp"`
	} `yaml:"binding"`
}

// Parse reads the MCP-bound entries of a tools file's contents.
func Parse(data []byte) ([]Entry, error) {
	var whole any
	if err := yaml.Unmarshal(data, &whole); err != nil {
		return nil, fmt.Errorf("not valid YAML: %v", err)
	}
	// Every key of the file, as the CLI loader checks them: an unknown or
	// misplaced key is an error naming the nearest valid one.
	if err := configkeys.Check(whole, configkeys.ToolsFile()); err != nil {
		return nil, err
	}
	var doc toolsDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %v", err)
	}
	inherit := doc.InheritEnv
	if inherit == nil {
		inherit = defaultInheritEnv
	}
	fileBox, _, err := decodeSandbox(&doc.Sandbox, nil)
	if err != nil {
		return nil, fmt.Errorf("field %v", err)
	}
	var out []Entry
	seen := map[string]int{}
	for i, t := range doc.Tools {
		e, ok, err := mcpEntry(i, &t, fileBox, seen)
		if err != nil {
			return nil, err
		}
		if ok {
			e.InheritEnv = inherit
			out = append(out, e)
		}
	}
	return out, nil
}

// mcpEntry reads tools[i] when it binds an MCP server (ok false when it is
// the CLI loader's), refusing a namespace another entry (in seen) binds.
func mcpEntry(i int, t *toolsEntry, fileBox *sandbox.Policy, seen map[string]int) (Entry, bool, error) {
	label := fmt.Sprintf("tools[%d]", i)
	if t.Binding.MCP.Kind == 0 {
		if t.Namespace != "" {
			return Entry{}, false, fmt.Errorf("%s: field namespace: only an MCP binding (binding.mcp) takes a namespace", label)
		}
		return Entry{}, false, nil
	}
	if t.Binding.CLI.Kind != 0 {
		return Entry{}, false, fmt.Errorf("%s: field binding: set cli or mcp, not both", label)
	}
	e, err := parseEntry(t.Namespace, t.Name, &t.Binding.MCP)
	if err != nil {
		return Entry{}, false, fmt.Errorf("%s: %v", label, err)
	}
	if j, dup := seen[e.Namespace]; dup {
		return Entry{}, false, fmt.Errorf("%s: field namespace: %q is already bound by tools[%d]", label, e.Namespace, j)
	}
	seen[e.Namespace] = i
	if e.Sandbox, _, err = decodeSandbox(&t.Sandbox, fileBox); err != nil {
		return Entry{}, false, fmt.Errorf("%s: field %v", label, err)
	}
	if e.Sandbox != nil && e.Server.Command == "" {
		return Entry{}, false, fmt.Errorf("%s: field sandbox: only a stdio server (command) runs under a sandbox, not a url", label)
	}
	return e, true, nil
}

// parseEntry validates one binding.mcp and its namespace.
func parseEntry(namespace, name string, node *yaml.Node) (Entry, error) {
	if name != "" {
		return Entry{}, fmt.Errorf("field name: an MCP binding names its tools itself; use namespace")
	}
	if namespace == "" {
		return Entry{}, fmt.Errorf("field namespace is required with binding.mcp (its tools appear as <namespace>.<tool>)")
	}
	if err := envelope.ValidateToolName(namespace); err != nil {
		return Entry{}, fmt.Errorf("field namespace: %v", err)
	}
	var raw bytes.Buffer
	if err := yaml.NewEncoder(&raw).Encode(node); err != nil {
		return Entry{}, fmt.Errorf("field binding.mcp: %v", err)
	}
	dec := yaml.NewDecoder(&raw)
	dec.KnownFields(true) // a typo in a server binding must not pass silently
	var sc ServerConfig
	if err := dec.Decode(&sc); err != nil {
		// yaml quotes the offending value; in env or headers that may be
		// a secret, so only the position and the kind of mistake remain.
		return Entry{}, fmt.Errorf("field binding.mcp: %s", quotedValue.ReplaceAllString(err.Error(), "`…`"))
	}
	switch {
	case sc.Command == "" && sc.URL == "":
		return Entry{}, fmt.Errorf("field binding.mcp: set command (a stdio server) or url (streamable HTTP)")
	case sc.Command != "" && sc.URL != "":
		return Entry{}, fmt.Errorf("field binding.mcp: set command or url, not both")
	case sc.Command == "" && (len(sc.Args) > 0 || len(sc.Env) > 0):
		return Entry{}, fmt.Errorf("field binding.mcp: args and env need command")
	case sc.URL == "" && len(sc.Headers) > 0:
		return Entry{}, fmt.Errorf("field binding.mcp.headers: headers need url")
	case sc.URL == "" && sc.OAuth != nil:
		return Entry{}, fmt.Errorf("field binding.mcp.oauth: oauth needs url")
	}
	if sc.OAuth != nil {
		if err := sc.OAuth.check(sc.Headers); err != nil {
			return Entry{}, err
		}
	}
	if err := checkCapabilities(sc.ClientCapabilities); err != nil {
		return Entry{}, err
	}
	if sc.Protocol != "" && sc.Protocol != protocolSession && sc.Protocol != protocolStateless {
		return Entry{}, fmt.Errorf("field binding.mcp.protocol: want %s or %s", protocolSession, protocolStateless)
	}
	if sc.URL != "" {
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Entry{}, fmt.Errorf("field binding.mcp.url: want an http(s) URL")
		}
	}
	return Entry{Namespace: namespace, Server: sc}, nil
}

// checkCapabilities refuses a client capability the bridge cannot honour.
func checkCapabilities(caps []string) error {
	for _, c := range caps {
		switch c {
		case capElicitation, capSampling:
		case "roots":
			return fmt.Errorf("field binding.mcp.client_capabilities: roots: the mesh has no roots to give a server")
		default:
			return fmt.Errorf("field binding.mcp.client_capabilities: %q: want elicitation or sampling", c)
		}
	}
	return nil
}

// decodeSandbox reads a sandbox block (a YAML node): the entry's own, or
// fallback when it has none; the word unconfined opts out of the fallback.
func decodeSandbox(node *yaml.Node, fallback *sandbox.Policy) (*sandbox.Policy, bool, error) {
	if node.Kind == 0 {
		return fallback, false, nil
	}
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, false, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false, err
	}
	return sandbox.Decode(raw)
}
