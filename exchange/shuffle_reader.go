package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"google.golang.org/protobuf/proto"

	"sluice/physical"
	"sluice/rpc"
)

// ShuffleReader is the leaf of a blocking-mode stage that reads a finished
// stage's output: partition p is the union of the files listed in
// Partitions[p]. Files on this executor are read from disk; others are
// fetched from their executor's Flight service. A partition with no
// locations is empty (writers omit empty files).
//
// Fetches of one partition run concurrently, capped by Env.MaxFetchBytes
// of files (by their size on disk) in flight at once; the cap is per
// stream, not per executor, because streams of one task are consumed in an
// order only the operators know (a join drains its build side first), and
// a shared budget held by an idle probe stream could starve the build side.
//
// Any failure to obtain a file, except cancellation, is returned wrapped in
// a *FetchError naming the producer, so the scheduler can re-run it.
type ShuffleReader struct {
	// StageID is the producer stage.
	StageID    int
	schema     *arrow.Schema
	Partitions [][]*rpc.PartitionLocation
}

// NewShuffleReader returns a reader of stage stageID's output, whose
// partition i is made of the files partitions[i].
func NewShuffleReader(stageID int, schema *arrow.Schema, partitions [][]*rpc.PartitionLocation) *ShuffleReader {
	return &ShuffleReader{StageID: stageID, schema: schema, Partitions: partitions}
}

// Schema implements physical.Operator.
func (r *ShuffleReader) Schema() *arrow.Schema { return r.schema }

// Children implements physical.Operator.
func (r *ShuffleReader) Children() []physical.Operator { return nil }

// OutputPartitioning implements physical.Operator.
func (r *ShuffleReader) OutputPartitioning() physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: len(r.Partitions)}
}

func (r *ShuffleReader) String() string {
	files := 0
	for _, p := range r.Partitions {
		files += len(p)
	}
	return fmt.Sprintf("ShuffleReader: stage=%d partitions=%d files=%d", r.StageID, len(r.Partitions), files)
}

// Execute implements physical.Operator. It starts fetching partition's
// files at once; Close stops and waits for the fetches.
func (r *ShuffleReader) Execute(ctx context.Context, partition int, tc *physical.TaskContext) (physical.Stream, error) {
	if partition < 0 || partition >= len(r.Partitions) {
		return nil, fmt.Errorf("shuffle reader of stage %d: partition %d out of range (%d partitions)", r.StageID, partition, len(r.Partitions))
	}
	env, err := envOf(tc)
	if err != nil {
		return nil, fmt.Errorf("shuffle reader of stage %d: %w", r.StageID, err)
	}
	s := &shuffleStream{env: env, alloc: tc.Alloc, secret: jobSecretOf(tc)}
	locs := r.Partitions[partition]
	s.mergeStream = startMerge(ctx, r.schema, 2, func(ctx context.Context, m *mergeStream) error { return s.run(ctx, m, locs) })
	return s, nil
}

type shuffleStream struct {
	*mergeStream
	env    *Env
	alloc  memory.Allocator
	secret string // the job's, for the tickets

	inflight atomic.Int64 // bytes of files being fetched (tests observe the cap)
	peak     atomic.Int64
}

// run fetches every location, admitting them in order under the byte cap.
func (s *shuffleStream) run(ctx context.Context, m *mergeStream, locs []*rpc.PartitionLocation) error {
	limit := s.env.maxFetchBytes()
	sem := semaphore.NewWeighted(limit)
	g, gctx := errgroup.WithContext(ctx)
	for _, loc := range locs {
		w := min(max(loc.NumBytes, 1), limit)
		if err := sem.Acquire(gctx, w); err != nil {
			break // the group's error (or ctx's) is reported by Wait
		}
		s.peak.Store(max(s.peak.Load(), s.inflight.Add(w)))
		g.Go(physical.Safe(func() error {
			defer func() {
				s.inflight.Add(-w)
				sem.Release(w)
			}()
			return s.fetch(gctx, m, loc)
		}))
	}
	return g.Wait()
}

// fetch reads one location into m.
func (s *shuffleStream) fetch(ctx context.Context, m *mergeStream, loc *rpc.PartitionLocation) error {
	var err error
	if src := s.localSource(loc); src != nil {
		err = s.readLocal(ctx, m, loc, src)
	} else {
		err = s.readRemote(ctx, m, loc)
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &FetchError{
		ExecutorID:   loc.ExecutorId,
		StageID:      int(loc.StageId),
		MapPartition: int(loc.MapPartition),
		Partition:    int(loc.Partition),
		Err:          err,
	}
}

// localSource returns the Env of the executor in this process that wrote
// loc (this reader's own, or a peer's), or nil when loc is to be fetched
// over Flight.
func (s *shuffleStream) localSource(loc *rpc.PartitionLocation) *Env {
	if s.env.ExecutorID != "" && loc.ExecutorId == s.env.ExecutorID {
		return s.env
	}
	if p := s.env.Peers.lookup(loc.FlightAddress, loc.ExecutorId); p != nil {
		s.env.Peers.reads.Add(1)
		return p
	}
	return nil
}

// readLocal reads loc from src, an executor in this process: its held
// batches themselves, or its shuffle file.
func (s *shuffleStream) readLocal(ctx context.Context, m *mergeStream, loc *rpc.PartitionLocation, src *Env) error {
	if src.WorkDir == "" || validJobID(loc.JobId) != nil {
		return fmt.Errorf("shuffle file %s is not under executor %s's work dir", loc.Path, src.ExecutorID)
	}
	path, ok := stageFile(src.WorkDir, loc.JobId, int(loc.StageId), loc.Path)
	if !ok {
		return fmt.Errorf("%s is not a shuffle file of stage %d of job %s in executor %s's work dir", loc.Path, loc.StageId, loc.JobId, src.ExecutorID)
	}
	if _, held, ok, err := src.Held.batches(path, loc.Batches); ok {
		if err != nil {
			return fmt.Errorf("output %s: %w", loc.Path, err)
		}
		return sendAll(ctx, m, held)
	}
	f, fr, err := openShuffleFile(path, s.alloc)
	if err != nil {
		return err
	}
	defer f.Close()
	defer fr.Close()
	batches, err := batchesOf(fr, loc.Batches)
	if err != nil {
		return fmt.Errorf("shuffle file %s: %w", loc.Path, err)
	}
	for _, i := range batches {
		b, err := fr.RecordBatchAt(i)
		if err != nil {
			return fmt.Errorf("reading shuffle file %s: %w", loc.Path, err)
		}
		if err := m.send(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// sendAll sends bs into m in order, releasing those it could not send.
func sendAll(ctx context.Context, m *mergeStream, bs []arrow.RecordBatch) error {
	for i, b := range bs {
		if err := m.send(ctx, b); err != nil {
			for _, rest := range bs[i+1:] {
				rest.Release()
			}
			return err
		}
	}
	return nil
}

func (s *shuffleStream) readRemote(ctx context.Context, m *mergeStream, loc *rpc.PartitionLocation) error {
	if s.env.Clients == nil {
		return errors.New("no Flight client pool configured")
	}
	ticket, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPartition{FetchPartition: &rpc.FetchPartition{
		JobId:        loc.JobId,
		StageId:      loc.StageId,
		MapPartition: loc.MapPartition,
		Partition:    loc.Partition,
		Path:         loc.Path,
		JobSecret:    s.secret,
		Batches:      loc.Batches,
	}}})
	if err != nil {
		return fmt.Errorf("encoding ticket: %w", err)
	}
	return doGet(ctx, s.env.Clients, loc.FlightAddress, ticket, s.alloc, m.send)
}

// doGet streams a ticket's batches from the Flight service at addr to
// send, which takes ownership of each batch.
func doGet(ctx context.Context, pool *ClientPool, addr string, ticket []byte, alloc memory.Allocator,
	send func(context.Context, arrow.RecordBatch) error) error {
	client, err := pool.Get(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the gRPC stream if we stop early
	stream, err := client.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return fmt.Errorf("flight do_get to %s: %w", addr, err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(alloc))
	if err != nil {
		return fmt.Errorf("flight do_get to %s: %w", addr, err)
	}
	defer rdr.Release()
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		if err := send(ctx, b); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("flight stream from %s: %w", addr, err)
	}
	return nil
}

var _ physical.Operator = (*ShuffleReader)(nil)
