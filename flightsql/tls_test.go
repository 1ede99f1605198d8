package flightsql

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

	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/rpc"
)

// testTLSFiles writes a CA and a certificate it signed for 127.0.0.1 (for
// servers and clients alike) into dir.
func testTLSFiles(t *testing.T, dir string) rpc.TLSFiles {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
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
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := rpc.TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
	for path, block := range map[string]*pem.Block{
		f.CA:   {Type: "CERTIFICATE", Bytes: caDER},
		f.Cert: {Type: "CERTIFICATE", Bytes: leafDER},
		f.Key:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestFlightSQLTLS serves the endpoint with mutual TLS, as the scheduler's
// --tls-* flags make it: a client with the CA and a certificate runs
// queries; a plaintext client and one without a certificate are refused.
func TestFlightSQLTLS(t *testing.T) {
	files := testTLSFiles(t, t.TempDir())
	serverTLS, clientTLS, err := files.Load()
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New()
	emb, err := cluster.StartEmbedded(context.Background(), cluster.EmbeddedConfig{Executors: 1, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	srv, err := Start(Config{Bind: "127.0.0.1:0", SchedulerAddr: emb.SchedulerAddr(), SchedulerSecurity: emb.Security(),
		Security: &rpc.Security{Token: testToken, ServerTLS: serverTLS}, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	try := func(sec *rpc.Security) error {
		c, err := afsql.NewClient(srv.Addr(), nil, nil, sec.DialOptions()...)
		if err != nil {
			return err
		}
		defer c.Close()
		rows, err := query(ctx, c, "SELECT 41 + 1")
		if err == nil && (len(rows) != 1 || rows[0] != "42") {
			t.Errorf("rows %q", rows)
		}
		return err
	}
	if err := try(&rpc.Security{Token: testToken, ClientTLS: clientTLS}); err != nil {
		t.Errorf("mutual TLS client: %v", err)
	}
	if err := try(&rpc.Security{Token: testToken}); err == nil {
		t.Error("a plaintext client was served")
	}
	_, clientNoCert, err := (rpc.TLSFiles{CA: files.CA}).Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := try(&rpc.Security{Token: testToken, ClientTLS: clientNoCert}); err == nil {
		t.Error("a client without a certificate was served")
	}
}
