package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"sluice/physical"
	"sluice/rpc"
)

// ShuffleWriter is the root of a blocking-mode stage: it drives its input
// partitions and writes their rows, split by output partition, to one
// Arrow IPC file per task under the executor's work dir (see files.go for
// the layout).
//
// Partitioning PartHash splits rows by physical.HashRows(Keys) scaled to Count;
// PartUnknown passes through: input partition i becomes output partition i.
//
// RunTask reports one rpc.PartitionLocation per (input partition, output
// partition with rows), naming the task's file and the partition's
// batches in it. An output partition that received no rows from an input
// partition gets no location: readers treat a missing location as empty.
type ShuffleWriter struct {
	input physical.Operator
	// JobID and StageID name the output: the job's directory, and the
	// stage in its files' names.
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
// concurrently into one file (see files.go); if any fails or ctx is
// cancelled it removes the file and returns the error.
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
	if len(partitions) == 0 {
		return nil, nil
	}
	dir, prefix := jobDir(te.WorkDir, w.JobID), shuffleFilePrefix(w.StageID, partitions[0])
	file := &taskFile{held: te.Held, open: func() (*fileWriter, error) {
		return createShuffleFile(dir, prefix, w.input.Schema(), tc.Alloc, te.Compression)
	}}
	results := make([][]*partOutput, len(partitions))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range partitions {
		g.Go(physical.Safe(func() error {
			outs, err := w.writePartition(gctx, p, file, tc)
			results[i] = outs
			return err
		}))
	}
	if err := g.Wait(); err != nil {
		file.abort()
		return nil, err
	}
	path, err := file.commit(heldPath(dir, prefix), w.JobID, w.input.Schema())
	if err != nil || path == "" {
		return nil, err // "": no rows
	}
	var out []*rpc.PartitionLocation
	for i, outs := range results {
		for _, o := range outs {
			out = append(out, &rpc.PartitionLocation{
				JobId:         w.JobID,
				StageId:       int32(w.StageID),
				MapPartition:  int32(partitions[i]),
				Partition:     int32(o.partition),
				ExecutorId:    te.ExecutorID,
				FlightAddress: te.FlightAddress,
				Path:          path,
				NumRows:       o.rows,
				NumBytes:      o.bytes,
				Batches:       o.batches,
			})
		}
	}
	return out, nil
}

// taskFile is the output a task's partitions write into: held in memory
// (see held.go) while the executor's budget has room, then a file, opened
// when the first batch does not fit, which takes the batches held so far
// first.
type taskFile struct {
	open func() (*fileWriter, error)
	held *HeldOutputs // nil: a file from the first batch
	mu   sync.Mutex
	f    *fileWriter
	// mem are the batches held, memBytes what they reserved.
	mem      []arrow.RecordBatch
	memBytes int64
}

// write appends b (which the caller still releases), returning its index
// in the output and the bytes it took.
func (t *taskFile) write(b arrow.RecordBatch) (int32, int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		n := heldBatchBytes(b)
		if t.held.reserve(n) {
			b.Retain()
			t.mem = append(t.mem, b)
			t.memBytes += n
			return int32(len(t.mem) - 1), n, nil
		}
		if err := t.toFile(); err != nil {
			return 0, 0, err
		}
	}
	return t.f.write(b)
}

// toFile opens the file and moves the held batches into it, in order, so
// that their indexes stay what write returned.
func (t *taskFile) toFile() error {
	f, err := t.open()
	if err != nil {
		return err
	}
	t.f = f
	for _, b := range t.mem {
		if _, _, err := f.write(b); err != nil {
			return err
		}
	}
	t.releaseHeld()
	return nil
}

// releaseHeld drops the batches held and gives back their bytes.
func (t *taskFile) releaseHeld() {
	for _, b := range t.mem {
		b.Release()
	}
	t.mem = nil
	t.held.unreserve(t.memBytes)
	t.memBytes = 0
}

// commit finishes the output: the file's path, or path, under which the
// held batches are registered as job's output, or "" when nothing was
// written.
func (t *taskFile) commit(path, job string, schema *arrow.Schema) (string, error) {
	if t.f != nil {
		if _, err := t.f.commit(); err != nil {
			return "", err
		}
		return t.f.path, nil
	}
	if len(t.mem) == 0 {
		return "", nil
	}
	t.held.add(path, job, schema, t.mem, t.memBytes)
	t.mem, t.memBytes = nil, 0
	return path, nil
}

func (t *taskFile) abort() {
	t.releaseHeld()
	if t.f != nil {
		t.f.abort()
	}
}

// partOutput is what one input partition wrote for one output partition.
type partOutput struct {
	partition   int
	batches     []int32
	rows, bytes int64
}

// writePartition writes input partition in into file, returning what it
// wrote for each output partition that got rows.
func (w *ShuffleWriter) writePartition(ctx context.Context, in int, file *taskFile, tc *physical.TaskContext) ([]*partOutput, error) {
	s, err := physical.ExecuteOp(ctx, w.input, in, tc)
	if err != nil {
		return nil, fmt.Errorf("shuffle writer stage %d partition %d: %w", w.StageID, in, err)
	}
	defer s.Close()

	n := 1
	if w.Part.Kind == physical.PartHash {
		n = w.Part.Count
	}
	outs := make([]*partOutput, n)
	schema := w.input.Schema()
	emit := func(_ context.Context, d int, b arrow.RecordBatch) error {
		defer b.Release()
		idx, size, err := file.write(b)
		if err != nil {
			return err
		}
		o := outs[d]
		if o == nil {
			o = &partOutput{partition: d}
			if w.Part.Kind != physical.PartHash {
				o.partition = in
			}
			outs[d] = o
		}
		o.batches = append(o.batches, idx)
		o.rows += b.NumRows()
		o.bytes += size
		return nil
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
	var done []*partOutput
	for _, o := range outs {
		if o != nil && o.rows > 0 {
			done = append(done, o)
		}
	}
	return done, nil
}

var _ StageWriter = (*ShuffleWriter)(nil)
