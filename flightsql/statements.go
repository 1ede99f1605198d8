package flightsql

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GetFlightInfoStatement runs a statement in the caller's session and
// returns one endpoint whose ticket streams its result (DoGetStatement).
// Planning errors, and in blocking mode errors of the whole run, surface
// here; errors met while streaming surface in DoGet.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd afsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "sluice has no transactions")
	}
	return s.run(ctx, cmd.GetQuery(), desc)
}

// run executes text in the caller's session and registers its result.
func (s *Server) run(ctx context.Context, text string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	cs, err := sessionFrom(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// The result outlives this call (DoGet reads it), so the statement
	// does not run under the call's context: what the session starts for
	// the result (the job's status stream, the partition fetches) would
	// end with it.
	res, err := s.sessions.execute(context.WithoutCancel(ctx), cs, text)
	if err != nil {
		return nil, statusOf(err)
	}
	r := s.results.add(res)
	ticket, err := afsql.CreateStatementQueryTicket([]byte(r.handle))
	if err != nil {
		s.results.finish(r)
		return nil, status.Error(codes.Internal, err.Error())
	}
	return s.flightInfo(desc, r.schema, ticket), nil
}

// DoGetStatement streams a result GetFlightInfo registered. Each ticket
// is read once.
func (s *Server) DoGetStatement(ctx context.Context, cmd afsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	r, rctx, ok := s.results.take(ctx, string(cmd.GetStatementHandle()))
	if !ok {
		return nil, nil, status.Error(codes.NotFound, "unknown ticket: the result was already read, cancelled or expired (fetch results soon after GetFlightInfo)")
	}
	ch := make(chan flight.StreamChunk, 2)
	go func() {
		defer close(ch)
		defer s.results.finish(r)
		for {
			b, err := r.res.Next(rctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if rctx.Err() != nil && ctx.Err() == nil {
					err = status.Error(codes.Canceled, "query cancelled")
				}
				ch <- flight.StreamChunk{Err: statusOf(err)}
				return
			}
			select {
			case ch <- flight.StreamChunk{Data: b}:
			case <-rctx.Done():
				b.Release()
				ch <- flight.StreamChunk{Err: status.Error(codes.Canceled, "query cancelled")}
				return
			}
		}
	}()
	return r.schema, ch, nil
}

// DoPutCommandStatementUpdate runs a statement for its effect (SET,
// CREATE, DROP): database/sql's Exec and ADBC's ExecuteUpdate come here.
// A query's rows are read and counted.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd afsql.StatementUpdate) (int64, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return 0, status.Error(codes.InvalidArgument, "sluice has no transactions")
	}
	return s.update(ctx, cmd.GetQuery())
}

func (s *Server) update(ctx context.Context, text string) (int64, error) {
	cs, err := sessionFrom(ctx)
	if err != nil {
		return 0, status.Error(codes.Internal, err.Error())
	}
	res, err := s.sessions.execute(ctx, cs, text)
	if err != nil {
		return 0, statusOf(err)
	}
	defer res.Close()
	var rows int64
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return 0, statusOf(err)
		}
		rows += b.NumRows()
		b.Release()
	}
}

// CancelFlightInfo cancels the statement behind a FlightInfo this server
// returned: a result not yet fetched is dropped and its job cancelled; one
// being streamed is stopped, so its DoGet ends with Canceled.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	st, err := s.cancel(req.GetInfo())
	return flight.CancelFlightInfoResult{Status: st}, err
}

// CancelQuery is the older form of CancelFlightInfo (Flight SQL's
// deprecated CancelQuery action).
func (s *Server) CancelQuery(ctx context.Context, req afsql.ActionCancelQueryRequest) (afsql.CancelResult, error) {
	st, err := s.cancel(req.GetInfo())
	switch {
	case err != nil:
		return afsql.CancelResultUnspecified, err
	case st == flight.CancelStatusCancelled:
		return afsql.CancelResultCancelled, nil
	}
	return afsql.CancelResultNotCancellable, nil
}

// cancel cancels the results an info's endpoints name; NotCancellable
// when none is live (already read, or expired).
func (s *Server) cancel(info *flight.FlightInfo) (flight.CancelStatus, error) {
	st := flight.CancelStatusNotCancellable
	for _, ep := range info.GetEndpoint() {
		t, err := afsql.GetStatementQueryTicket(ep.GetTicket())
		if err != nil {
			return flight.CancelStatusUnspecified, status.Error(codes.InvalidArgument, "not a statement of this server")
		}
		if s.results.cancelHandle(string(t.GetStatementHandle())) {
			st = flight.CancelStatusCancelled
		}
	}
	return st, nil
}

// statusOf turns a statement's error into a gRPC status carrying its
// message: the user's errors (syntax, unknown column, division by zero)
// are InvalidArgument; a status from the cluster keeps its code.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return status.Error(st.Code(), err.Error())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "query cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.InvalidArgument, err.Error())
}
