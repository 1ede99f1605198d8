package cluster

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRecoverInterceptors checks that a handler's panic becomes an
// Internal error of that call instead of ending the server's process.
func TestRecoverInterceptors(t *testing.T) {
	_, err := recoverUnary(context.Background(), nil, nil, func(context.Context, any) (any, error) {
		panic("bad request")
	})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "internal error: bad request") {
		t.Errorf("unary: got %v", err)
	}
	err = recoverStream(nil, nil, nil, func(any, grpc.ServerStream) error {
		panic("bad stream")
	})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "internal error: bad stream") {
		t.Errorf("stream: got %v", err)
	}
}
