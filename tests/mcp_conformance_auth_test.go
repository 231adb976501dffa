package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// authSuiteRevisions are the revisions the suite's auth suite is run at:
// each scenario of both belongs to both, and one wire says nothing of the
// other.
var authSuiteRevisions = []string{"2025-11-25", "2026-07-28"}

// authOneByOne are the client auth/* scenarios outside the auth suite,
// each run alone at the revision the suite infers: the 2026-07-28 ones,
// the 2025-03-26 back-compatibility ones and the extensions.
var authOneByOne = []string{
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
	"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
	"auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
	"auth/metadata-issuer-mismatch",
	"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/client-credentials-basic", "auth/client-credentials-jwt", "auth/enterprise-managed-authorization",
	"auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer",
}

// beyondTheClient names the auth/* scenarios the bridge's OAuth client
// does not pass, each with the reason. All are extensions the suite does
// not score (SEP-1730); the bridge's client authenticates with a client
// secret, or a person's grant, and sends bearer tokens.
var beyondTheClient = map[string]string{
	"auth/client-credentials-jwt":           "needs private_key_jwt client authentication (RFC 7523); the bridge's client authenticates with a client secret",
	"auth/enterprise-managed-authorization": "needs the identity-assertion grant (token exchange of an enterprise IdP's ID-JAG, RFC 8693 + RFC 7523); not implemented",
	"auth/dpop":                             "needs DPoP-bound tokens (RFC 9449); the bridge sends bearer tokens",
	"auth/dpop-nonce":                       "needs DPoP-bound tokens with server nonces (RFC 9449); the bridge sends bearer tokens",
	"auth/wif-jwt-bearer":                   "needs the workload-identity JWT-bearer grant (RFC 7523 §2.1); not implemented",
}

// suiteClientLine is one scenario of a suite run's summary.
var suiteClientLine = regexp.MustCompile(`^[✓✗] (auth/\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?`)

// oneClientResult is the result line of a single client scenario.
var oneClientResult = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`)

// TestMCPInteropAuthClient runs the official conformance suite's client
// auth/* scenarios against the bridge's OAuth client (testdata/
// mcpauthclient: the client-credentials client, and the authorization
// code client of toolmesh login with its loopback redirect). The suite
// starts its own authorization server and OAuth-protected MCP server per
// scenario and runs the client with the server's URL. Every scenario
// passes — no check failed and none warned — except those
// beyondTheClient lists, which must still fail.
func TestMCPInteropAuthClient(t *testing.T) {
	dir := npmDir(t, npmNode22, npmConformance)
	client, err := testutil.BuildBinary("./testdata/mcpauthclient", "mcpauthclient")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rev := range authSuiteRevisions {
		n := 0
		for _, line := range strings.Split(conformanceClient(t, dir, client, "--suite", "auth", "--spec-version", rev), "\n") {
			if m := suiteClientLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				got[m[1]+" at "+rev] = clientVerdict(m[2], m[3], m[4])
				n++
			}
		}
		if n == 0 {
			t.Fatalf("the auth suite at %s printed no summary", rev)
		}
	}
	for _, sc := range authOneByOne {
		out := conformanceClient(t, dir, client, "--scenario", sc)
		m := oneClientResult.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("scenario %s printed no result:\n%s", sc, out)
		}
		got[sc] = clientVerdict(m[1], m[3], m[4])
	}
	t.Logf("conformance %s, client auth scenarios against the bridge's OAuth client:\n%s", npmConformance, authTable(got))
	checkAuthClient(t, got)
}

// checkAuthClient fails for every scenario that did not pass and is not
// beyondTheClient, and for every one listed there that now passes.
func checkAuthClient(t *testing.T, got map[string]string) {
	t.Helper()
	var failed, crossed []string
	for name, res := range got {
		_, beyond := beyondTheClient[name]
		switch {
		case res != "pass" && !beyond:
			failed = append(failed, name+": "+res)
		case res == "pass" && beyond:
			crossed = append(crossed, name)
		}
	}
	sort.Strings(failed)
	sort.Strings(crossed)
	if len(failed) > 0 {
		t.Errorf("%d auth scenarios do not pass against the bridge's OAuth client:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	if len(crossed) > 0 {
		t.Errorf("scenarios listed in beyondTheClient now pass; take them off:\n  %s", strings.Join(crossed, "\n  "))
	}
}

// conformanceClient runs the suite's client mode with the client command
// and args, and returns its output.
func conformanceClient(t *testing.T, dir, client string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "conformance"),
		append([]string{"client", "--command", client}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // it exits 1 when a scenario fails; its output says which
	return out.String()
}

// clientVerdict is "pass" (checks passed, none failed or warned), or what
// went wrong.
func clientVerdict(passed, failed, warnings string) string {
	p, _ := strconv.Atoi(passed)
	f, _ := strconv.Atoi(failed)
	w, _ := strconv.Atoi(warnings)
	if f == 0 && w == 0 && p > 0 {
		return "pass"
	}
	return fmt.Sprintf("fail (%d failed, %d warnings of %d checks)", f, w, p+f+w)
}

// authTable is the per-scenario result, one row each, with the reason of
// each scenario beyond the client.
func authTable(got map[string]string) string {
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| scenario | result |\n|---|---|\n")
	for _, n := range names {
		res := got[n]
		if why, ok := beyondTheClient[n]; ok {
			res += " (" + why + ")"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", n, res)
	}
	return b.String()
}
