package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// StartServerWith runs a nats-server on a random loopback port with
// configure applied to its options (users, TLS, an operator), stops it
// when the test ends, and returns its client URL.
func StartServerWith(t testing.TB, configure func(*server.Options)) string {
	t.Helper()
	opts := &server.Options{}
	configure(opts)
	return startOn(t, opts).ClientURL()
}

// StartServerFromConfig runs a nats-server from the configuration file at
// path, exactly as shipped but for its listen address (a random loopback
// port), and stops it when the test ends.
func StartServerFromConfig(t testing.TB, path string) *server.Server {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return startOn(t, opts)
}

// startOn starts a server with opts on a random loopback port, quiet.
func startOn(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", server.RANDOM_PORT, true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("server not ready")
	}
	return s
}

// NewOperator makes an operator with one account and one user, writes the
// user's credentials file as dir/name.creds, and returns a server
// configuration that trusts the operator and knows the account.
func NewOperator(t testing.TB, dir, name string) (configure func(*server.Options), credsFile string) {
	t.Helper()
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	ojwt := encodeClaims(t, jwt.NewOperatorClaims(opub), okp)
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ajwt := encodeClaims(t, jwt.NewAccountClaims(apub), okp)
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	ujwt := encodeClaims(t, jwt.NewUserClaims(upub), akp)
	useed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, useed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile = filepath.Join(dir, name+".creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) {
		claims, err := jwt.DecodeOperatorClaims(ojwt)
		if err != nil {
			t.Fatal(err)
		}
		resolver := &server.MemAccResolver{}
		if err := resolver.Store(apub, ajwt); err != nil {
			t.Fatal(err)
		}
		o.TrustedOperators, o.AccountResolver = []*jwt.OperatorClaims{claims}, resolver
	}, credsFile
}

// encodeClaims signs claims with signer, failing the test if it cannot.
func encodeClaims(t testing.TB, claims jwt.Claims, signer nkeys.KeyPair) string {
	t.Helper()
	token, err := claims.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	return token
}
