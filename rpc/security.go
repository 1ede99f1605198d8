package rpc

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata keys sluice's calls carry besides their messages.
const (
	// AuthMetadataKey carries "Bearer <token>": the cluster's shared
	// secret, checked by every server that has one.
	AuthMetadataKey = "authorization"
	// AdminMetadataKey carries the operator's token: the scheduler shows
	// a caller presenting it every session's jobs in full.
	AdminMetadataKey = "sluice-admin-token"
	// SessionMetadataKey carries the client session's secret: the jobs a
	// session submits are bound to it, and only a caller presenting the
	// same secret may follow, cancel or release them.
	SessionMetadataKey = "sluice-session-key"
)

// Security says how a process authenticates its calls and checks its
// callers': the cluster's shared token and TLS. A nil *Security is a
// cluster without either (every call accepted, plaintext), as before
// security existed; every method accepts nil.
//
// The same value serves both sides: a server checks Token on every call
// (gRPC and Flight, unary and streaming) and a client sends it on every
// call. Cluster members (scheduler, executors) are both.
type Security struct {
	// Token is the cluster's shared secret ("": calls are not
	// authenticated).
	Token string
	// AdminToken is the operator's token (scheduler only; "": nobody is an
	// operator). A client sends it when it is set.
	AdminToken string
	// ServerTLS, when set, makes servers speak TLS with this config (with
	// ClientCAs and RequireAndVerifyClientCert for mutual TLS).
	ServerTLS *tls.Config
	// ClientTLS, when set, makes clients dial with TLS and this config.
	ClientTLS *tls.Config
}

// NewToken returns a random token of 128 bits, hex-encoded: what an
// embedded cluster uses so that its loopback ports are not open to every
// local user.
func NewToken() string {
	return RandomHex(16)
}

// RandomHex returns n random bytes from crypto/rand, hex-encoded.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a predictable
		// secret would be worse than stopping.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// ReadTokenFile reads a token from a file: its content with surrounding
// white space removed. An empty file is an error, since it would turn
// authentication off without saying so.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// Authenticated says whether callers must present a token.
func (s *Security) Authenticated() bool { return s != nil && s.Token != "" }

// Encrypted says whether servers speak TLS.
func (s *Security) Encrypted() bool { return s != nil && s.ServerTLS != nil }

// ServerOptions are the transport credentials of a server.
func (s *Security) ServerOptions() []grpc.ServerOption {
	if s == nil || s.ServerTLS == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(s.ServerTLS))}
}

// DialOptions are a client's transport credentials and the per-call
// credentials carrying the tokens.
func (s *Security) DialOptions() []grpc.DialOption {
	transport := insecure.NewCredentials()
	if s != nil && s.ClientTLS != nil {
		transport = credentials.NewTLS(s.ClientTLS)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	if s != nil && (s.Token != "" || s.AdminToken != "") {
		opts = append(opts, grpc.WithPerRPCCredentials(tokenCreds{token: s.Token, admin: s.AdminToken}))
	}
	return opts
}

// tokenCreds sends the tokens with every call.
type tokenCreds struct {
	token, admin string
}

func (c tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	md := map[string]string{}
	if c.token != "" {
		md[AuthMetadataKey] = "Bearer " + c.token
	}
	if c.admin != "" {
		md[AdminMetadataKey] = c.admin
	}
	return md, nil
}

// RequireTransportSecurity is false: a cluster may use a token without
// TLS on a trusted network (the token then travels in clear, which the
// operations guide says).
func (c tokenCreds) RequireTransportSecurity() bool { return false }

// errUnauthenticated is what a caller without the right token is told; it
// says nothing about what was expected.
var errUnauthenticated = status.Error(codes.Unauthenticated,
	"unauthenticated: this sluice cluster requires its token (--auth-token-file FILE, or SLUICE_AUTH_TOKEN for the shell)")

// check verifies the token a call carries, in constant time.
func (s *Security) check(ctx context.Context) error {
	if !s.Authenticated() {
		return nil
	}
	got, ok := strings.CutPrefix(metadataValue(ctx, AuthMetadataKey), "Bearer ")
	if !ok || !Equal(got, s.Token) {
		return errUnauthenticated
	}
	return nil
}

// Equal compares two secrets in constant time (for equal lengths; the
// length itself is not secret).
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// IsAdmin says whether the call carries the operator's token.
func (s *Security) IsAdmin(ctx context.Context) bool {
	if s == nil || s.AdminToken == "" {
		return false
	}
	return Equal(metadataValue(ctx, AdminMetadataKey), s.AdminToken)
}

// SessionKey is the session secret a call carries ("" when none).
func SessionKey(ctx context.Context) string {
	return metadataValue(ctx, SessionMetadataKey)
}

func metadataValue(ctx context.Context, key string) string {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ""
	}
	if v := md.Get(key); len(v) == 1 {
		return v[0]
	}
	return ""
}

// UnaryInterceptor refuses unary calls without the token.
func (s *Security) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := s.check(ctx); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor refuses streaming calls (the scheduler's status
// streams, every Flight call) without the token.
func (s *Security) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := s.check(ss.Context()); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// SessionCredentials sends a client session's secret with every call, so
// the scheduler binds the session's jobs to it.
func SessionCredentials(key string) grpc.DialOption {
	return grpc.WithPerRPCCredentials(sessionCreds(key))
}

type sessionCreds string

func (c sessionCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{SessionMetadataKey: string(c)}, nil
}

func (c sessionCreds) RequireTransportSecurity() bool { return false }

// TLSFiles names the PEM files of a process's TLS setup.
type TLSFiles struct {
	// Cert and Key are the process's certificate and private key: required
	// on a server; on a client they are what it presents for mutual TLS.
	Cert, Key string
	// CA verifies the peer: the servers' certificates (clients), and, on a
	// server, the clients' certificates, which are then required (mutual
	// TLS). Empty: clients verify servers with the system's roots and
	// servers ask for no client certificate.
	CA string
}

// Empty says no TLS flag was given.
func (f TLSFiles) Empty() bool { return f.Cert == "" && f.Key == "" && f.CA == "" }

// Load reads the files into a server config (nil when there is no
// certificate to serve) and a client config.
func (f TLSFiles) Load() (server, client *tls.Config, err error) {
	if f.Empty() {
		return nil, nil, nil
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, nil, errors.New("TLS: --tls-cert and --tls-key go together")
	}
	var certs []tls.Certificate
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS: loading --tls-cert and --tls-key: %w", err)
		}
		certs = []tls.Certificate{c}
	}
	var pool *x509.CertPool
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS: reading --tls-ca: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("TLS: --tls-ca %s holds no PEM certificate", f.CA)
		}
	}
	client = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: certs}
	if len(certs) > 0 {
		server = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: certs}
		if pool != nil {
			server.ClientCAs = pool
			server.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return server, client, nil
}

// ExposedWarning is the warning a server bound to addr should print, or ""
// when there is nothing to warn about: it listens beyond loopback while
// calls need no token and travel in clear.
func (s *Security) ExposedWarning(what, addr string) string {
	if s.Authenticated() || s.Encrypted() || IsLoopback(addr) {
		return ""
	}
	return fmt.Sprintf("%s listens on %s, beyond loopback, without --auth-token-file or TLS: anyone who can reach it can run queries, read the tables its --allowed-locations allow, and register executors (see docs/operations.md, Security)", what, addr)
}

// IsLoopback says whether a listen address (host:port) accepts only local
// connections. An empty host or an unspecified one (0.0.0.0, ::) listens
// on every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
