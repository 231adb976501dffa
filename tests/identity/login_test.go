package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/catalog"
	"github.com/toolmesh/toolmesh/internal/testutil"
	"github.com/toolmesh/toolmesh/mesh/embedded"
	"github.com/toolmesh/toolmesh/meshtest"
)

// `toolmesh login` runs the authorization code flow with PKCE against a
// real OpenID provider: the test is the person's browser, which opens the
// printed address, fills in the provider's login form and follows it back
// to the loopback redirect. The grant lands in the state directory with
// mode 0600; the worker's bridge then reaches the protected server with
// it, refreshing the short-lived tokens and saving each rotated refresh
// token. When the provider revokes the grant, the call fails saying to
// log in again; after a new login the running worker calls again. No
// refresh token, access token or client secret appears in anything the
// commands print or the calls answer.
func TestLoginThenTheBridgeUsesAndRefreshesTheGrant(t *testing.T) {
	// 9s tokens: within oauth2's 10s expiry margin, so every request
	// of the bridge refreshes.
	p := startLoginIDP(t, 9*time.Second)
	uri := protectedServer(t, p.issuer)
	p.store.setResource(uri)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	tools := loginTools(t, uri)
	m := meshtest.NewWith(t, meshtest.Config{Server: embedded.Config{Listen: "127.0.0.1:0"}})
	before := workerWithoutLogin(t, tools, m.Server.ClientURL())

	login := logIn(t, p, tools)
	path := filepath.Join(state, "toolmesh", "oauth", "remote.json")
	first := readGrant(t, path)

	worker := startOutput(t, toolmeshBin, "worker", "--config", tools, "--server", m.Server.ClientURL(), "--log-level", "debug")
	worker.waitFor(t, regexp.MustCompile(`bridges ready`))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitForHello(ctx, t, m)
	refreshes := p.store.refreshes()
	answers := []string{hello(ctx, t, m), hello(ctx, t, m)}
	last := readGrant(t, path)
	if p.store.refreshes() <= refreshes || last.Token.RefreshToken == first.Token.RefreshToken {
		t.Fatalf("refreshes %d before the calls, %d after; refresh token rotated and saved: %v",
			refreshes, p.store.refreshes(), last.Token.RefreshToken != first.Token.RefreshToken)
	}

	p.store.revokeAll()
	resp, err := m.Caller.Call(ctx, "remote.hello", map[string]any{})
	refused := fmt.Sprintf("%s %v", resp.Data, err)
	if err == nil && resp.Success || !strings.Contains(refused, "toolmesh login") || !strings.Contains(refused, "unauthorized") || !strings.Contains(refused, `"ran":"no"`) {
		t.Fatalf("a call after the grant was revoked: %s; want a failure saying to run toolmesh login", refused)
	}
	t.Logf("toolmesh login printed:\n%s\nthe call after the revocation: %s", login, refused)
	again := logIn(t, p, tools)
	answers = append(answers, hello(ctx, t, m)) // the same worker, the new login
	renewed := readGrant(t, path)
	worker.stop()
	noSecrets(t, []string{cliSecret, first.Token.RefreshToken, first.Token.AccessToken, last.Token.RefreshToken,
		last.Token.AccessToken, renewed.Token.RefreshToken, renewed.Token.AccessToken},
		map[string]string{"worker before login": before, "toolmesh login": login.String(), "toolmesh login again": again.String(),
			"worker": worker.String(), "answers": strings.Join(answers, "\n"), "the refused call": refused})
}

// loginTools writes a tools file binding the server at uri as remote,
// reached with the CLI client's login.
func loginTools(t *testing.T, uri string) string {
	t.Helper()
	t.Setenv("TOOLMESH_TEST_CLI_SECRET", cliSecret)
	tools := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(tools, []byte(`tools:
  - namespace: remote
    binding:
      mcp: {url: "`+uri+`", oauth: {login: true, client_id: `+cliClientID+`, client_secret_env: TOOLMESH_TEST_CLI_SECRET}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return tools
}

// waitForHello waits until the bridged remote.hello is in m's catalogue.
func waitForHello(ctx context.Context, t *testing.T, m *meshtest.Mesh) {
	t.Helper()
	testutil.WaitFor(t, "remote.hello in the catalogue", func() bool {
		cat, err := m.Caller.Catalog().List(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(cat.Tools, func(c catalog.Tool) bool { return c.Spec.Name == "remote.hello" })
	})
}

// hello calls remote.hello through the mesh and returns its answer.
func hello(ctx context.Context, t *testing.T, m *meshtest.Mesh) string {
	t.Helper()
	resp, err := m.Caller.Call(ctx, "remote.hello", map[string]any{})
	if err != nil || !resp.Success || !strings.Contains(string(resp.Data), "hello from the protected server") {
		t.Fatalf("remote.hello through the bridge: %+v, %v", resp, err)
	}
	return string(resp.Data)
}

// noSecrets fails for every output that shows one of the secrets.
func noSecrets(t *testing.T, secrets []string, outputs map[string]string) {
	t.Helper()
	for name, out := range outputs {
		for _, s := range secrets {
			if s != "" && strings.Contains(out, s) {
				t.Errorf("%s shows a secret of the grant (%d bytes):\n%s", name, len(s), out)
			}
		}
	}
}

// logIn runs toolmesh login for the binding remote of tools, the test
// being the person's browser, and returns what it printed.
func logIn(t *testing.T, p *loginIDP, tools string) *output {
	t.Helper()
	login := startOutput(t, toolmeshBin, "login", "--config", tools, "--no-browser", "remote", "--log-level", "debug")
	authURL := login.waitFor(t, regexp.MustCompile(`(?m)^\s+(http://\S+)$`))[1]
	browserLogin(t, p, authURL)
	if code := login.wait(t); code != 0 || !strings.Contains(login.String(), "logged in: namespace remote, 1 tools") {
		t.Fatalf("toolmesh login: exit %d\n%s", code, login)
	}
	return login
}

// workerWithoutLogin runs the worker before anyone logged in: it must
// refuse to start, saying how to log in. It returns what it printed.
func workerWithoutLogin(t *testing.T, tools, server string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, toolmeshBin, "worker", "--config", tools, "--server", server, "--log-level", "debug").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "toolmesh login") {
		t.Fatalf("worker before the login: %v\n%s\nwant a refusal saying to run toolmesh login", err, out)
	}
	return string(out)
}

// storedGrant is the part of the grant file the test reads.
type storedGrant struct {
	ClientID string `json:"client_id"`
	Token    struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	} `json:"token"`
}

// readGrant reads the grant at path, checking that only its owner can
// read it or its directory.
func readGrant(t *testing.T, path string) storedGrant {
	t.Helper()
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Fatalf("%s has mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g storedGrant
	if err := json.Unmarshal(data, &g); err != nil || g.ClientID != cliClientID || g.Token.RefreshToken == "" || g.Token.AccessToken == "" {
		t.Fatalf("the grant file holds no refresh token for %s (%v)", cliClientID, err)
	}
	return g
}

// loginForm finds the login page's hidden auth request id.
var loginForm = regexp.MustCompile(`name="id" value="([^"]+)"`)

// browserLogin is the person's browser: it opens authURL (the provider
// sends it to its login page), submits the person's name and password,
// and follows the provider back to toolmesh login's loopback redirect.
func browserLogin(t *testing.T, p *loginIDP, authURL string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Timeout: time.Minute}
	page := browse(t, browser, http.MethodGet, authURL, nil)
	m := loginForm.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the provider's page after %s has no login form:\n%s", authURL, page)
	}
	form := url.Values{"id": {m[1]}, "username": {loginUser}, "password": {loginPassword}}
	if done := browse(t, browser, http.MethodPost, p.issuer+"/login/username", form); !strings.Contains(done, "Logged in") {
		t.Fatalf("after the login form the browser shows:\n%s", done)
	}
}

// browse sends one request, following redirects, and returns the page.
func browse(t *testing.T, c *http.Client, method, u string, form url.Values) string {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s ended at %s: %s (%v)\n%s", method, u, resp.Request.URL.Redacted(), resp.Status, err, page)
	}
	return string(page)
}

// output is a running program whose stdout and stderr are gathered.
type output struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // a token when something was written
	done chan struct{} // closed when the program ended
	code int
}

// startOutput starts bin with args; it is stopped when the test ends.
func startOutput(t *testing.T, bin string, args ...string) *output {
	t.Helper()
	o := &output{cmd: exec.Command(bin, args...), more: make(chan struct{}, 1), done: make(chan struct{})}
	o.cmd.Stdout, o.cmd.Stderr = o, o
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = o.cmd.Wait()
		o.code = o.cmd.ProcessState.ExitCode()
		close(o.done)
	}()
	t.Cleanup(o.stop)
	return o
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case o.more <- struct{}{}:
	default:
	}
	return o.buf.Write(b)
}

// String is everything the program printed so far.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output matches re and returns the match.
func (o *output) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		if m := re.FindStringSubmatch(o.String()); m != nil {
			return m
		}
		select {
		case <-o.more:
		case <-o.done:
			if m := re.FindStringSubmatch(o.String()); m != nil {
				return m
			}
			t.Fatalf("%s ended before printing %s:\n%s", o.cmd.Path, re, o)
		case <-timeout:
			t.Fatalf("%s printed no %s in a minute:\n%s", o.cmd.Path, re, o)
		}
	}
}

// wait waits for the program to end and returns its exit code.
func (o *output) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-o.done:
		return o.code
	case <-time.After(time.Minute):
		t.Fatalf("%s did not end in a minute:\n%s", o.cmd.Path, o)
		return -1
	}
}

// stop ends the program (SIGTERM) and waits for it.
func (o *output) stop() {
	select {
	case <-o.done:
		return
	default:
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	<-o.done
}
