package exchange

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/rpc"
)

// rawDoGet sends ticket bytes to addr and reads the stream to its end,
// returning the rows read and the error.
func rawDoGet(t *testing.T, pool *ClientPool, addr string, ticket []byte) (int, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := 0
	err := doGet(context.Background(), pool, addr, ticket, mem, func(_ context.Context, b arrow.RecordBatch) error {
		rows += int(b.NumRows())
		b.Release()
		return nil
	})
	return rows, err
}

func fetchTicket(t *testing.T, f *rpc.FetchPartition) []byte {
	t.Helper()
	b, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPartition{FetchPartition: f}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFlightServiceTickets(t *testing.T) {
	checkGoroutines(t)
	env, svc := newExecutorEnv(t, "e1")
	parts := writeStage(t, env, "job", 1, 300, 2)
	loc := parts[0][0]
	other := writeStage(t, env, "other", 1, 10, 1)[0][0]
	pool := NewClientPool(nil)
	defer pool.Close()

	tests := []struct {
		name   string
		ticket []byte
		code   codes.Code
		msg    string
		rows   int
	}{
		{name: "valid by path", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, MapPartition: loc.MapPartition, Partition: 0, Path: loc.Path, Batches: loc.Batches}),
			code: codes.OK, rows: int(loc.NumRows)},
		{name: "valid by file name", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, MapPartition: loc.MapPartition, Partition: 0, Path: filepath.Base(loc.Path), Batches: loc.Batches}),
			code: codes.OK, rows: int(loc.NumRows)},
		{name: "the whole file", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: loc.Path}),
			code: codes.OK, rows: 300},
		{name: "no such batch", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: loc.Path, Batches: []int32{0, 1 << 20}}),
			code: codes.InvalidArgument, msg: "no batch 1048576"},
		{name: "no path", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, MapPartition: loc.MapPartition, Partition: 0}),
			code: codes.InvalidArgument, msg: "is not a shuffle file of stage 1"},
		{name: "unknown job", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "nope", StageId: 1}),
			code: codes.NotFound, msg: "unknown job nope"},
		{name: "job id with a separator", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "../job", StageId: 1}),
			code: codes.InvalidArgument, msg: "invalid job id"},
		{name: "path escaping the work dir", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: filepath.Join(env.WorkDir, "job", "1", "..", "..", "..", "etc", "passwd")}),
			code: codes.InvalidArgument, msg: "is not a shuffle file of stage 1 of job job"},
		{name: "another job's file", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: other.Path}),
			code: codes.InvalidArgument, msg: "is not a shuffle file"},
		{name: "another stage's file", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 2, Path: loc.Path}),
			code: codes.InvalidArgument, msg: "is not a shuffle file of stage 2"},
		{name: "relative path", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: "job/s1-0-0.arrow"}),
			code: codes.InvalidArgument, msg: "is not a shuffle file"},
		{name: "missing partition", ticket: fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Partition: 7, MapPartition: 0, Path: "s1-0-1.arrow"}),
			code: codes.NotFound, msg: "no partition 7 (map partition 0) of stage 1"},
		{name: "malformed ticket", ticket: []byte{0xff, 0xff, 0xff},
			code: codes.InvalidArgument, msg: "malformed ticket"},
		{name: "empty ticket", ticket: nil,
			code: codes.InvalidArgument, msg: "ticket names no fetch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := rawDoGet(t, pool, env.FlightAddress, tt.ticket)
			if tt.code == codes.OK {
				if err != nil || rows != tt.rows {
					t.Fatalf("rows %d, err %v; want %d rows", rows, err, tt.rows)
				}
				return
			}
			st, _ := status.FromError(unwrapStatus(err))
			if st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
				t.Fatalf("error %v, want %s containing %q", err, tt.code, tt.msg)
			}
		})
	}

	if err := svc.RemoveJob("job"); err != nil {
		t.Fatal(err)
	}
	_, err := rawDoGet(t, pool, env.FlightAddress, fetchTicket(t, &rpc.FetchPartition{JobId: "job", StageId: 1, Path: loc.Path}))
	if st, _ := status.FromError(unwrapStatus(err)); st.Code() != codes.NotFound || !strings.Contains(st.Message(), "unknown job job") {
		t.Fatalf("after RemoveJob: %v", err)
	}
	if err := svc.RemoveJob(".."); err == nil {
		t.Fatal("RemoveJob(\"..\") accepted")
	}
}

// unwrapStatus finds the gRPC status error inside err's chain.
func unwrapStatus(err error) error {
	for e := err; e != nil; {
		if _, ok := status.FromError(e); ok {
			return e
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return err
}

var _ flight.DataStreamReader = (flight.FlightService_DoGetClient)(nil)
