package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"sluice/physical"
	"sluice/rpc"
)

// ShuffleWriter is the root of a blocking-mode stage: it drives its input
// partitions and writes each one's rows to Arrow IPC files, one per output
// partition, under the executor's work dir (see files.go for the layout).
//
// Partitioning PartHash splits rows by physical.HashRows(Keys) scaled to Count;
// PartUnknown passes through: input partition i becomes output partition i.
//
// RunTask reports one rpc.PartitionLocation per (input partition, output
// partition with rows). An output partition that received no rows from an
// input partition gets no file and no location: readers treat a missing
// location as empty, which keeps wide hash shuffles of small data from
// producing thousands of empty files.
type ShuffleWriter struct {
	input physical.Operator
	// JobID and StageID name the output's directory.
	JobID   string
	StageID int
	// Part is how output partitions are formed (PartHash or PartUnknown).
	Part physical.Partitioning
}

// NewShuffleWriter returns a ShuffleWriter of input for stage stageID of
// job jobID, partitioned by p.
func NewShuffleWriter(input physical.Operator, jobID string, stageID int, p physical.Partitioning) *ShuffleWriter {
	return &ShuffleWriter{input: input, JobID: jobID, StageID: stageID, Part: p}
}

// Input is the stage body the writer drives.
func (w *ShuffleWriter) Input() physical.Operator { return w.input }

// Schema implements physical.Operator.
func (w *ShuffleWriter) Schema() *arrow.Schema { return w.input.Schema() }

// Children implements physical.Operator.
func (w *ShuffleWriter) Children() []physical.Operator { return []physical.Operator{w.input} }

// OutputPartitioning is the partitioning of the files the writer produces.
func (w *ShuffleWriter) OutputPartitioning() physical.Partitioning {
	if w.Part.Kind == physical.PartHash {
		return w.Part
	}
	return physical.Partitioning{Kind: physical.PartUnknown, Count: w.input.OutputPartitioning().Count}
}

func (w *ShuffleWriter) String() string {
	return fmt.Sprintf("ShuffleWriter: job=%s stage=%d output=%s", w.JobID, w.StageID, w.OutputPartitioning())
}

// Execute implements physical.Operator. A stage writer produces files, not
// a stream: executors call RunTask.
func (w *ShuffleWriter) Execute(context.Context, int, *physical.TaskContext) (physical.Stream, error) {
	return nil, fmt.Errorf("internal: shuffle writer of stage %d is a stage root; run it with RunTask", w.StageID)
}

func (w *ShuffleWriter) check() error {
	if err := validJobID(w.JobID); err != nil {
		return fmt.Errorf("shuffle writer: %w", err)
	}
	switch w.Part.Kind {
	case physical.PartHash:
		if w.Part.Count < 1 || len(w.Part.Keys) == 0 {
			return fmt.Errorf("shuffle writer: hash partitioning needs keys and at least one partition, got %s", w.Part)
		}
	case physical.PartUnknown:
	default:
		return fmt.Errorf("shuffle writer: unsupported output partitioning %s", w.Part)
	}
	return nil
}

// RunTask implements StageWriter. It writes the given input partitions
// concurrently; if any fails or ctx is cancelled it removes every file it
// wrote and returns the error.
func (w *ShuffleWriter) RunTask(ctx context.Context, partitions []int, tc *physical.TaskContext) ([]*rpc.PartitionLocation, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	te, err := taskEnvOf(tc)
	if err != nil {
		return nil, err
	}
	if te.WorkDir == "" {
		return nil, errors.New("shuffle writer: the executor has no work dir")
	}
	in := w.input.OutputPartitioning().Count
	for _, p := range partitions {
		if p < 0 || p >= in {
			return nil, fmt.Errorf("shuffle writer: stage %d has no partition %d (it has %d)", w.StageID, p, in)
		}
	}
	results := make([][]*rpc.PartitionLocation, len(partitions))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range partitions {
		g.Go(physical.Safe(func() error {
			locs, err := w.writePartition(gctx, p, te, tc)
			results[i] = locs
			return err
		}))
	}
	err = g.Wait()
	var out []*rpc.PartitionLocation
	for _, locs := range results {
		out = append(out, locs...)
	}
	if err != nil {
		for _, l := range out {
			os.Remove(l.Path)
		}
		return nil, err
	}
	return out, nil
}

// writePartition writes input partition in. On error it returns the
// locations it already committed, for RunTask to remove.
func (w *ShuffleWriter) writePartition(ctx context.Context, in int, te *TaskEnv, tc *physical.TaskContext) (locs []*rpc.PartitionLocation, err error) {
	s, err := physical.ExecuteOp(ctx, w.input, in, tc)
	if err != nil {
		return nil, fmt.Errorf("shuffle writer stage %d partition %d: %w", w.StageID, in, err)
	}
	defer s.Close()

	n := 1
	if w.Part.Kind == physical.PartHash {
		n = w.Part.Count
	}
	files := make([]*fileWriter, n)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.abort()
			}
		}
	}()
	schema := w.input.Schema()
	emit := func(_ context.Context, d int, b arrow.RecordBatch) error {
		defer b.Release()
		if files[d] == nil {
			out := d
			if w.Part.Kind != physical.PartHash {
				out = in
			}
			f, err := createShuffleFile(shuffleFile(te.WorkDir, w.JobID, w.StageID, out, in), schema, tc.Alloc, te.Compression)
			if err != nil {
				return err
			}
			files[d] = f
		}
		return files[d].write(b)
	}

	var split *splitter
	var co *coalescer
	if w.Part.Kind == physical.PartHash {
		split = newSplitter(w.Part, schema, tc)
		defer split.release()
	} else {
		co = newFileCoalescer(schema, tc)
		defer co.release()
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("shuffle writer stage %d partition %d: %w", w.StageID, in, err)
		}
		if split != nil {
			err = split.add(ctx, b, emit)
		} else if b.NumRows() > 0 {
			err = co.add(ctx, 0, b, emit)
		} else {
			b.Release()
		}
		if err != nil {
			return nil, fmt.Errorf("shuffle writer stage %d partition %d: %w", w.StageID, in, err)
		}
	}
	if split != nil {
		err = split.flushAll(ctx, emit)
	} else {
		err = co.flush(ctx, 0, emit)
	}
	if err != nil {
		return nil, fmt.Errorf("shuffle writer stage %d partition %d: %w", w.StageID, in, err)
	}
	for d, f := range files {
		if f == nil {
			continue
		}
		files[d] = nil
		size, err := f.commit()
		if err != nil {
			return locs, err
		}
		out := d
		if w.Part.Kind != physical.PartHash {
			out = in
		}
		locs = append(locs, &rpc.PartitionLocation{
			JobId:         w.JobID,
			StageId:       int32(w.StageID),
			MapPartition:  int32(in),
			Partition:     int32(out),
			ExecutorId:    te.ExecutorID,
			FlightAddress: te.FlightAddress,
			Path:          f.path,
			NumRows:       f.rows,
			NumBytes:      size,
		})
	}
	return locs, nil
}

var _ StageWriter = (*ShuffleWriter)(nil)
