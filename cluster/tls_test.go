package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/rpc"
	"sluice/session"
)

// testPKI writes a CA and a certificate it signed for 127.0.0.1 and
// localhost (for servers and clients alike) into dir, as PEM files.
type testPKI struct {
	ca, cert, key string
}

func newTestPKI(t *testing.T, dir, name string) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name + " node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{ca: filepath.Join(dir, name+"-ca.pem"), cert: filepath.Join(dir, name+"-cert.pem"), key: filepath.Join(dir, name+"-key.pem")}
	for path, block := range map[string]*pem.Block{
		p.ca:   {Type: "CERTIFICATE", Bytes: caDER},
		p.cert: {Type: "CERTIFICATE", Bytes: leafDER},
		p.key:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// security loads the PKI's files as a process given --tls-cert, --tls-key
// and --tls-ca would, with token.
func (p testPKI) security(t *testing.T, token string, withCert bool) *rpc.Security {
	t.Helper()
	files := rpc.TLSFiles{CA: p.ca}
	if withCert {
		files.Cert, files.Key = p.cert, p.key
	}
	srv, cli, err := files.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &rpc.Security{Token: token, ServerTLS: srv, ClientTLS: cli}
}

// TestMutualTLS runs an embedded cluster whose every connection (client
// to scheduler and executors, scheduler to executors, executor to
// executor) is mutual TLS: queries work with the cluster's CA and a
// certificate, and fail with another CA or without a client certificate.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	good := newTestPKI(t, dir, "good")
	bad := newTestPKI(t, dir, "bad")
	token := rpc.NewToken()
	emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, Security: good.security(t, token, true)})
	ctx := testContext(t, 30*time.Second)

	c := newTestClient(t, emb.SchedulerAddr(), good.security(t, token, true))
	got, _, err := c.query(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "over mutual TLS", got, localRows(t, cat, heavyQuery), true)
	// The shell's session, pipelined: executors stream to each other and
	// to the client over TLS.
	s, err := session.ConnectWith(emb.SchedulerAddr(), good.security(t, token, true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, set := range []string{"SET execution.mode = 'pipelined'", "SET optimizer.broadcast_join_threshold_bytes = 0"} {
		if _, err := s.Execute(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Execute(ctx, heavyQuery)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, formatRows(b)...)
		b.Release()
	}
	res.Close()
	sameRows(t, "pipelined over mutual TLS", got, localRows(t, cat, heavyQuery), true)

	for _, tc := range []struct {
		name string
		sec  *rpc.Security
	}{
		{"another CA", bad.security(t, token, true)},
		{"no client certificate", good.security(t, token, false)},
		{"plaintext", &rpc.Security{Token: token}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, emb.SchedulerAddr(), tc.sec)
			_, _, err := c.query(ctx, "SELECT 1", nil)
			if err == nil || !strings.Contains(err.Error(), "Unavailable") {
				t.Errorf("got %v, want the connection refused (Unavailable)", err)
			}
		})
	}
}
