package rpc

import (
	"context"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestUnaryInterceptorChecksToken(t *testing.T) {
	sec := &Security{Token: "s3cret"}
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	for _, tc := range []struct {
		name string
		md   metadata.MD
		ok   bool
	}{
		{"no metadata", nil, false},
		{"no token", metadata.Pairs("other", "x"), false},
		{"wrong token", metadata.Pairs(AuthMetadataKey, "Bearer s3cres"), false},
		{"token without scheme", metadata.Pairs(AuthMetadataKey, "s3cret"), false},
		{"prefix of the token", metadata.Pairs(AuthMetadataKey, "Bearer s3c"), false},
		{"two tokens", metadata.Pairs(AuthMetadataKey, "Bearer s3cret", AuthMetadataKey, "Bearer x"), false},
		{"right token", metadata.Pairs(AuthMetadataKey, "Bearer s3cret"), true},
	} {
		ctx := context.Background()
		if tc.md != nil {
			ctx = metadata.NewIncomingContext(ctx, tc.md)
		}
		resp, err := sec.UnaryInterceptor()(ctx, nil, &grpc.UnaryServerInfo{}, handler)
		if tc.ok && (err != nil || resp != "ok") {
			t.Errorf("%s: got %v, %v; want the handler's answer", tc.name, resp, err)
		}
		if !tc.ok && status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: got %v, want Unauthenticated", tc.name, err)
		}
	}
	// No token configured: every call passes.
	var none *Security
	if _, err := none.UnaryInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{}, handler); err != nil {
		t.Errorf("without a token: %v", err)
	}
}

func TestTokenCredentialsRoundTrip(t *testing.T) {
	sec := &Security{Token: NewToken(), AdminToken: NewToken()}
	md, err := tokenCreds{token: sec.Token, admin: sec.AdminToken}.GetRequestMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.New(md))
	if err := sec.check(ctx); err != nil {
		t.Errorf("the client's metadata fails the server's check: %v", err)
	}
	if !sec.IsAdmin(ctx) {
		t.Error("the admin token is not recognised")
	}
	if (&Security{Token: sec.Token}).IsAdmin(ctx) {
		t.Error("a server without an admin token took a caller for the operator")
	}
}

func TestExposedWarning(t *testing.T) {
	var none *Security
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:50050", false},
		{"localhost:1", false},
		{"[::1]:1", false},
		{"0.0.0.0:50050", true},
		{":0", true},
		{"10.1.2.3:9", true},
	} {
		if got := none.ExposedWarning("the scheduler", tc.addr) != ""; got != tc.warn {
			t.Errorf("%s without security: warning %v, want %v", tc.addr, got, tc.warn)
		}
	}
	w := none.ExposedWarning("the scheduler", "0.0.0.0:50050")
	if !strings.Contains(w, "--auth-token-file") {
		t.Errorf("the warning does not say what to do: %q", w)
	}
	if (&Security{Token: "t"}).ExposedWarning("the scheduler", "0.0.0.0:1") != "" {
		t.Error("warned although calls need a token")
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadTokenFile(dir + "/missing"); err == nil {
		t.Error("a missing token file was accepted")
	}
	for content, want := range map[string]string{"  \n": "", "abc\n": "abc", " x y \n": "x y"} {
		p := dir + "/tok"
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTokenFile(p)
		if want == "" && err == nil {
			t.Errorf("%q: an empty token file was accepted", content)
		}
		if want != "" && (err != nil || got != want) {
			t.Errorf("%q: got %q, %v; want %q", content, got, err, want)
		}
	}
}
