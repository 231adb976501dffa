package tests

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// authScenarios are the suite's client auth/* scenarios. Those of the
// auth suite belong to both 2025-11-25 and 2026-07-28 and are run at
// each (one wire says nothing of the other); the rest are run at the
// revision the suite infers: the 2026-07-28 ones, the 2025-03-26
// back-compatibility ones and the extensions. Each is run alone, so the
// client's exit status counts (a suite run reports checks only).
var authScenarios = []clientScenarioSpec{
	{"auth/metadata-default", bothRevisions}, {"auth/metadata-var1", bothRevisions},
	{"auth/metadata-var2", bothRevisions}, {"auth/metadata-var3", bothRevisions},
	{"auth/basic-cimd", bothRevisions}, {"auth/scope-from-www-authenticate", bothRevisions},
	{"auth/scope-from-scopes-supported", bothRevisions}, {"auth/scope-omitted-when-undefined", bothRevisions},
	{"auth/scope-step-up", bothRevisions}, {"auth/scope-retry-limit", bothRevisions},
	{"auth/token-endpoint-auth-basic", bothRevisions}, {"auth/token-endpoint-auth-post", bothRevisions},
	{"auth/token-endpoint-auth-none", bothRevisions}, {"auth/pre-registration", bothRevisions},
	{"auth/resource-mismatch", nil}, {"auth/offline-access-scope", nil}, {"auth/offline-access-not-supported", nil},
	{"auth/authorization-server-migration", nil}, {"auth/iss-supported", nil}, {"auth/iss-not-advertised", nil},
	{"auth/iss-supported-missing", nil}, {"auth/iss-wrong-issuer", nil}, {"auth/iss-unexpected", nil},
	{"auth/iss-normalized", nil}, {"auth/metadata-issuer-mismatch", nil},
	{"auth/2025-03-26-oauth-metadata-backcompat", nil}, {"auth/2025-03-26-oauth-endpoint-fallback", nil},
	{"auth/client-credentials-basic", nil}, {"auth/client-credentials-jwt", nil},
	{"auth/enterprise-managed-authorization", nil}, {"auth/dpop", nil}, {"auth/dpop-nonce", nil},
	{"auth/wif-jwt-bearer", nil},
}

// bothRevisions are the revisions a scenario of the auth suite is run at.
var bothRevisions = []string{"2025-11-25", "2026-07-28"}

// beyondTheClient names the auth/* scenarios the bridge's OAuth client
// does not pass, each with the reason. All are extensions the suite does
// not score (SEP-1730); the bridge's client authenticates with a client
// secret, or a person's grant, and sends bearer tokens.
var beyondTheClient = map[string]string{
	"auth/client-credentials-jwt":           "needs private_key_jwt client authentication (RFC 7523); the bridge's client authenticates with a client secret",
	"auth/enterprise-managed-authorization": "needs the identity-assertion grant (token exchange of an enterprise IdP's ID-JAG, RFC 8693 + RFC 7523), a grant the bridge's client does not make",
	"auth/dpop":                             "needs DPoP-bound tokens (RFC 9449); the bridge sends bearer tokens",
	"auth/dpop-nonce":                       "needs DPoP-bound tokens with server nonces (RFC 9449); the bridge sends bearer tokens",
	"auth/wif-jwt-bearer":                   "needs the workload-identity JWT-bearer grant (RFC 7523 §2.1), a grant the bridge's client does not make",
}

// TestMCPInteropAuthClient runs the official conformance suite's client
// auth/* scenarios against the bridge's OAuth client (testdata/
// mcpauthclient: the client-credentials client, and the authorization
// code client of toolmesh login with its loopback redirect). The suite
// starts its own authorization server and OAuth-protected MCP server per
// scenario and runs the client with the server's URL. Every scenario
// passes — no check failed and none warned — except those
// beyondTheClient lists, which must still fail.
func TestMCPInteropAuthClient(t *testing.T) {
	got := runClientScenarios(t, "./testdata/mcpauthclient", authScenarios)
	t.Logf("conformance %s, client auth scenarios against the bridge's OAuth client:\n%s", npmConformance, clientTable(got, beyondTheClient))
	checkClientScenarios(t, "auth scenarios do not pass against the bridge's OAuth client", got, beyondTheClient, "beyondTheClient")
}

// clientScenarioSpec is a client scenario of the suite and the revisions
// it is run at (none: once, at the revision the suite infers).
type clientScenarioSpec struct {
	name      string
	revisions []string
}

// runClientScenarios builds the client program at pkg and runs each
// scenario alone against it, once for each of its revisions, returning
// each run's verdict (clientScenario) under "name at revision", or under
// the name for a scenario run at the revision the suite infers.
func runClientScenarios(t *testing.T, pkg string, scenarios []clientScenarioSpec) map[string]string {
	t.Helper()
	dir := npmDir(t, npmNode22, npmConformance)
	client, err := testutil.BuildBinary(pkg, path.Base(pkg))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sc := range scenarios {
		if sc.revisions == nil {
			got[sc.name] = clientScenario(t, dir, client, sc.name)
		}
		for _, rev := range sc.revisions {
			got[sc.name+" at "+rev] = clientScenario(t, dir, client, sc.name, "--spec-version", rev)
		}
	}
	return got
}

// checkClientScenarios fails for every scenario of got that did not
// pass and is not in beyond, and for every one beyond lists that now
// passes (listName names that list in the message).
func checkClientScenarios(t *testing.T, what string, got, beyond map[string]string, listName string) {
	t.Helper()
	var failed, crossed []string
	for name, res := range got {
		_, known := beyond[name]
		switch {
		case res != "pass" && !known:
			failed = append(failed, name+": "+res)
		case res == "pass" && known:
			crossed = append(crossed, name)
		}
	}
	sort.Strings(failed)
	sort.Strings(crossed)
	if len(failed) > 0 {
		t.Errorf("%d %s:\n  %s", len(failed), what, strings.Join(failed, "\n  "))
	}
	if len(crossed) > 0 {
		t.Errorf("scenarios listed in %s now pass; take them off:\n  %s", listName, strings.Join(crossed, "\n  "))
	}
}

// clientExit is the suite's word for a client that failed.
var clientExit = regexp.MustCompile(`Client exited with code (\d+)`)

// clientScenario runs one client scenario and returns its verdict: "pass"
// when its checks passed, none failed or warned and the suite judged
// the whole run passed (the client exited 0, or the scenario allows it).
func clientScenario(t *testing.T, dir, client, name string, args ...string) string {
	t.Helper()
	out := conformanceClient(t, dir, client, append([]string{"--scenario", name}, args...)...)
	m := clientResult.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("scenario %s printed no result:\n%s", name, out)
	}
	v := clientVerdict(m[1], m[3], m[4])
	if v == "pass" && !strings.Contains(out, "OVERALL: PASSED") {
		v = "fail (the suite judged the run failed)"
		if e := clientExit.FindStringSubmatch(out); e != nil {
			v = "fail (the client exited with code " + e[1] + ")"
		}
	}
	return v
}

// conformanceClient runs the suite's client mode with the client command
// and args, and returns its output.
func conformanceClient(t *testing.T, dir, client string, args ...string) string {
	t.Helper()
	return runSuite(t, dir, append([]string{"client", "--command", client}, args...)...)
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

// clientTable is the per-scenario result, one row each, with the reason
// of each scenario beyond lists.
func clientTable(got, beyond map[string]string) string {
	return scenarioTable(got, []string{"result"}, func(n string) []string {
		if why, ok := beyond[n]; ok {
			return []string{got[n] + " (" + why + ")"}
		}
		return []string{got[n]}
	})
}
