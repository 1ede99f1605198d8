package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/rpc"
)

// FlightService is an executor's Arrow Flight service. DoGet serves two
// tickets (an rpc.Ticket, protobuf-encoded), each only with its job's
// secret (Env.Secrets):
//
//   - FetchPartition: one shuffle file of a job this executor holds. The
//     job's directory must exist and the file must lie under
//     <WorkDir>/<job>/<stage>/; anything else is refused, so a ticket can
//     never read outside the executor's shuffle output.
//   - FetchPipelinedPartition: one pipelined queue of the Registry, waiting
//     up to Env.ProducerWait for its producer to register. A queue is
//     consumed by its first reader, so the ticket must also carry the
//     queue's own capability (Registry.TakeCapable), which only the
//     consumers wired to it hold: another task of the job, or the client,
//     is refused and the queue left intact.
//
// DoExchange serves multiplexed pipelined reads: every partition one
// consumer task reads from one producer task, on one stream with credit
// per partition (mux_server.go), under the same secret and capability
// checks.
//
// Batches travel as Arrow IPC, their buffers compressed as Env.Compression
// says (LZ4 by default).
type FlightService struct {
	flight.BaseFlightServer
	env *Env
	// Alloc allocates the buffers the service decodes and compresses (nil:
	// the Go allocator); tests set a checked allocator.
	Alloc memory.Allocator
	// served counts the pipelined queues streamed to a remote reader.
	served atomic.Int64
	// exchanges counts the multiplexed streams (DoExchange) served.
	exchanges atomic.Int64
}

// MuxStreams is how many multiplexed streams (exchange.multiplex) the
// service has served; each carried one or more of the queues
// PipelinedServed counts.
func (s *FlightService) MuxStreams() int64 { return s.exchanges.Load() }

// PipelinedServed is how many pipelined queues the service has streamed
// to readers in other processes (consumer tasks on other executors, and
// clients); the registry's Taken less this is what was read locally.
func (s *FlightService) PipelinedServed() int64 { return s.served.Load() }

// NewFlightService returns the Flight service of the executor env.
func NewFlightService(env *Env) *FlightService {
	return &FlightService{env: env}
}

func (s *FlightService) alloc() memory.Allocator {
	if s.Alloc != nil {
		return s.Alloc
	}
	return memory.DefaultAllocator
}

// DoGet implements flight.FlightServiceServer. Its errors do not name the
// executor's work dir.
func (s *FlightService) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	return scrubStatus(s.doGet(tkt, stream), s.env.WorkDir)
}

func (s *FlightService) doGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	var t rpc.Ticket
	if err := proto.Unmarshal(tkt.GetTicket(), &t); err != nil {
		return status.Errorf(codes.InvalidArgument, "malformed ticket: %v", err)
	}
	switch k := t.Kind.(type) {
	case *rpc.Ticket_FetchPartition:
		if err := s.checkSecret(stream.Context(), k.FetchPartition.JobId, k.FetchPartition.JobSecret, 0); err != nil {
			return err
		}
		return s.fetchPartition(stream, k.FetchPartition)
	case *rpc.Ticket_FetchPipelinedPartition:
		// A consumer may ask before the producer's task (which brings the
		// secret) reached this executor.
		if err := s.checkSecret(stream.Context(), k.FetchPipelinedPartition.JobId, k.FetchPipelinedPartition.JobSecret, s.env.producerWait()); err != nil {
			return err
		}
		return s.fetchPipelined(stream, k.FetchPipelinedPartition)
	}
	return status.Error(codes.InvalidArgument, "ticket names no fetch (want fetch_partition or fetch_pipelined_partition)")
}

// checkSecret refuses a ticket without its job's secret. A job this
// executor holds no secret for is unknown here: it ran none of the job's
// tasks, the job's data was removed, or the data is an earlier scheduler
// instance's, which nobody may read any more.
func (s *FlightService) checkSecret(ctx context.Context, job, secret string, wait time.Duration) error {
	if s.env.Secrets == nil {
		return nil
	}
	known, ok := s.env.Secrets.Check(ctx, job, secret, wait)
	switch {
	case !known:
		return status.Errorf(codes.NotFound, "unknown job %s on executor %s (its data was removed, or the executor restarted)", job, s.env.ExecutorID)
	case !ok:
		return status.Errorf(codes.PermissionDenied, "the ticket does not carry the secret of job %s: only the job's tasks and the session that submitted it may read its data", job)
	}
	return nil
}

// shufflePath checks a FetchPartition ticket against the work dir and
// returns the file it names.
func (s *FlightService) shufflePath(f *rpc.FetchPartition) (string, error) {
	if s.env.WorkDir == "" {
		return "", status.Error(codes.FailedPrecondition, "this executor keeps no shuffle files (no work dir)")
	}
	if err := validJobID(f.JobId); err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	if st, err := os.Stat(jobDir(s.env.WorkDir, f.JobId)); err != nil || !st.IsDir() {
		return "", status.Errorf(codes.NotFound, "unknown job %s on executor %s (its data was removed, or the executor restarted)", f.JobId, s.env.ExecutorID)
	}
	path, ok := stageFile(s.env.WorkDir, f.JobId, int(f.StageId), f.Path)
	if !ok {
		return "", status.Errorf(codes.InvalidArgument, "path %q is not a shuffle file of stage %d of job %s", f.Path, f.StageId, f.JobId)
	}
	return path, nil
}

func (s *FlightService) fetchPartition(stream flight.FlightService_DoGetServer, f *rpc.FetchPartition) error {
	if s.env.WorkDir != "" && validJobID(f.JobId) == nil {
		if path, ok := stageFile(s.env.WorkDir, f.JobId, int(f.StageId), f.Path); ok {
			schema, held, ok, err := s.env.Held.batches(path, f.Batches)
			if err != nil {
				return status.Errorf(codes.InvalidArgument, "%s: %v", f.Path, err)
			}
			if ok {
				return s.sendHeld(stream, schema, held)
			}
		}
	}
	path, err := s.shufflePath(f)
	if err != nil {
		return err
	}
	file, r, err := openShuffleFile(path, s.alloc())
	if errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.NotFound, "no partition %d (map partition %d) of stage %d of job %s on executor %s",
			f.Partition, f.MapPartition, f.StageId, f.JobId, s.env.ExecutorID)
	}
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	defer file.Close()
	defer r.Close()
	batches, err := batchesOf(r, f.Batches)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: %v", path, err)
	}
	w := flight.NewRecordWriter(stream, append(s.env.Compression.ipcOptions(), ipc.WithSchema(r.Schema()), ipc.WithAllocator(s.alloc()))...)
	defer w.Close()
	for _, i := range batches {
		b, err := r.RecordBatchAt(i)
		if err != nil {
			return status.Errorf(codes.Internal, "reading %s: %v", path, err)
		}
		err = w.Write(b)
		b.Release()
		if err != nil {
			return streamErr(stream.Context(), err)
		}
	}
	return nil
}

// sendHeld streams a held output's batches, releasing each.
func (s *FlightService) sendHeld(stream flight.FlightService_DoGetServer, schema *arrow.Schema, bs []arrow.RecordBatch) error {
	defer func() {
		for _, b := range bs {
			if b != nil {
				b.Release()
			}
		}
	}()
	w := flight.NewRecordWriter(stream, append(s.env.Compression.ipcOptions(), ipc.WithSchema(schema), ipc.WithAllocator(s.alloc()))...)
	defer w.Close()
	for i, b := range bs {
		err := w.Write(b)
		b.Release()
		bs[i] = nil
		if err != nil {
			return streamErr(stream.Context(), err)
		}
	}
	return nil
}

func (s *FlightService) fetchPipelined(stream flight.FlightService_DoGetServer, f *rpc.FetchPipelinedPartition) error {
	if s.env.Registry == nil {
		return status.Error(codes.FailedPrecondition, "this executor has no pipelined registry")
	}
	ctx := stream.Context()
	k := QueueKey{JobID: f.JobId, StageID: int(f.StageId), TaskID: int(f.TaskId), Partition: int(f.Partition)}
	var q *QueueReader
	var err error
	if s.env.Secrets == nil {
		// An executor checking no secrets (tests of the exchange alone)
		// checks no capabilities either.
		q, err = s.env.Registry.Take(ctx, k, s.env.producerWait())
	} else {
		q, err = s.env.Registry.TakeCapable(ctx, k, s.env.producerWait(), f.Capability)
	}
	if err != nil {
		if errors.Is(err, ErrNoCapability) {
			return status.Error(codes.PermissionDenied, err.Error())
		}
		if errors.Is(err, ErrJobReleased) {
			return status.Errorf(codes.NotFound, "unknown job %s on executor %s: %v", f.JobId, s.env.ExecutorID, err)
		}
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return status.Error(codes.NotFound, err.Error())
	}
	defer q.Close()
	s.served.Add(1)
	return sendQueue(ctx, stream, q.Schema(), q.Next, s.alloc(), s.env.Compression)
}

// sendQueue writes a queue's batches to a Flight stream until EOF. A
// producer error becomes the stream's error status, so the consumer fails
// rather than seeing a short stream.
func sendQueue(ctx context.Context, stream flight.FlightService_DoGetServer, schema *arrow.Schema,
	next func(context.Context) (arrow.RecordBatch, error), alloc memory.Allocator, c Compression) error {
	w := flight.NewRecordWriter(stream, append(c.ipcOptions(), ipc.WithSchema(schema), ipc.WithAllocator(alloc))...)
	defer w.Close()
	for {
		b, err := next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return queueErrStatus(err)
		}
		err = w.Write(b)
		b.Release()
		if err != nil {
			return streamErr(ctx, err)
		}
	}
}

func streamErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Errorf(codes.Unavailable, "sending batch: %v", err)
}

// RemoveJob deletes job's shuffle files and releases its pipelined queues.
func (s *FlightService) RemoveJob(jobID string) error {
	if err := validJobID(jobID); err != nil {
		return err
	}
	if s.env.Registry != nil {
		s.env.Registry.DropJob(jobID)
	}
	if s.env.Secrets != nil {
		s.env.Secrets.Forget(jobID)
	}
	s.env.Held.DropJob(jobID)
	if s.env.WorkDir == "" {
		return nil
	}
	dir, err := detachJobDir(s.env.WorkDir, jobID)
	if err != nil {
		return fmt.Errorf("removing data of job %s: %w", jobID, err)
	}
	if dir == "" {
		return nil
	}
	if s.env.RemoveLater != nil {
		s.env.RemoveLater(dir)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing data of job %s: %w", jobID, err)
	}
	return nil
}

var _ flight.FlightServer = (*FlightService)(nil)

// queueErrStatus is the status a Flight server sends for a producer's
// queue that ended with err.
func queueErrStatus(err error) error {
	if errors.Is(err, ErrProducerCancelled) {
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Aborted, err.Error())
}
