package mesh

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// Each way of authenticating in ConnectOptions reaches a server that
// demands it, and the wrong secret is refused.
func TestConnectAuthenticates(t *testing.T) {
	dir := t.TempDir()
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(dir, "other.nk")
	_ = os.WriteFile(otherFile, otherSeed, 0o600)
	pki := newTestPKI(t, dir)
	operator, goodCreds := testutil.NewOperator(t, dir, "good")
	_, badCreds := testutil.NewOperator(t, dir, "bad") // a user of another operator

	cases := []struct {
		name      string
		configure func(*server.Options)
		good, bad ConnectOptions
	}{
		{"token", func(o *server.Options) { o.Authorization = "s3cret" },
			ConnectOptions{Token: "s3cret"}, ConnectOptions{Token: "wrong"}},
		{"user and password", func(o *server.Options) { o.Username, o.Password = "ann", "pw" },
			ConnectOptions{User: "ann", Password: "pw"}, ConnectOptions{User: "ann", Password: "nope"}},
		{"nkey", func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} },
			ConnectOptions{NKeySeed: seedFile}, ConnectOptions{NKeySeed: otherFile}},
		{"JWT credentials", operator,
			ConnectOptions{Creds: goodCreds}, ConnectOptions{Creds: badCreds}},
		{"mutual TLS", func(o *server.Options) {
			cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.serverCert, KeyFile: pki.serverKey, CaFile: pki.ca, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			o.TLSConfig, o.TLS, o.TLSVerify, o.TLSTimeout = cfg, true, true, 5
		}, ConnectOptions{TLSCA: pki.ca, TLSCert: pki.clientCert, TLSKey: pki.clientKey}, ConnectOptions{TLSCA: pki.ca}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := testutil.StartServerWith(t, c.configure)
			good, bad := c.good, c.bad
			good.URL, bad.URL = url, url
			good.MaxReconnects, bad.MaxReconnects = -1, -1
			nc, err := Connect(context.Background(), good)
			if err != nil {
				t.Fatalf("right credentials refused: %v", err)
			}
			if err := nc.Flush(); err != nil {
				t.Errorf("connected but cannot talk: %v", err)
			}
			nc.Close()
			if nc, err := Connect(context.Background(), bad); err == nil {
				nc.Close()
				t.Error("wrong credentials accepted")
			}
		})
	}
}

type testPKI struct{ ca, serverCert, serverKey, clientCert, clientKey string }

// newTestPKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all PEM, into dir.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolmesh test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
		return certFile, keyFile
	}
	p := testPKI{ca: filepath.Join(dir, "ca.pem")}
	writePEM(t, p.ca, "CERTIFICATE", caDER)
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
