// Package session is the client side of a sluice connection: it holds the
// session's settings, runs statements and hands results to the renderer as a
// stream of record batches.
//
// A session runs statements either on an in-process engine (New: the plan's
// partitions are pulled right here) or on a cluster (Connect: the scheduler
// plans and runs the job; the session follows its status stream and reads
// the final stage's partitions over Arrow Flight).
package session

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/engine"
	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/render"
)

// Session runs statements with its own settings. A Session is used by one
// goroutine at a time.
type Session struct {
	Settings *engine.Settings
	// OnProgress, when set, receives a cluster job's progress while it runs
	// (called from the goroutine running the statement).
	OnProgress func(Progress)
	// OnNotice, when set, receives the cluster's notices about a running
	// query, such as "query retried after executor exec-2 was lost
	// (attempt 2 of 2)" (called from the goroutine reading the result).
	OnNotice func(string)
	backend  backend
}

// Progress is a running job's progress.
type Progress struct {
	StagesDone, StagesTotal             int
	TasksRunning, TasksDone, TasksTotal int
	Rows                                int64
}

// ClusterInfo describes the cluster a session uses.
type ClusterInfo struct {
	Scheduler string
	Policy    string
	Executors []ExecutorInfo
	// RunningJobs are the IDs of unfinished jobs.
	RunningJobs []string
}

// ExecutorInfo is one executor's state.
type ExecutorInfo struct {
	ID, Address        string
	FreeVcores, Vcores int
	SinceHeartbeat     time.Duration
}

// Cluster describes the cluster, or fails for an in-process session.
func (s *Session) Cluster(ctx context.Context) (*ClusterInfo, error) {
	r, ok := s.backend.(*remote)
	if !ok {
		return nil, errors.New("this session runs queries in process, not on a cluster")
	}
	st, err := r.clusterState(ctx)
	if err != nil {
		return nil, err
	}
	info := &ClusterInfo{Scheduler: r.addr, Policy: st.Policy}
	for _, e := range st.Executors {
		info.Executors = append(info.Executors, ExecutorInfo{
			ID: e.Meta.GetId(), Address: e.Meta.GetGrpcAddress(), FreeVcores: int(e.FreeVcores), Vcores: int(e.Meta.GetVcores()),
			SinceHeartbeat: time.Since(time.UnixMilli(e.LastHeartbeatUnixMs)),
		})
	}
	for _, j := range st.RunningJobs {
		info.RunningJobs = append(info.RunningJobs, j.JobId)
	}
	return info, nil
}

type backend interface {
	execute(ctx context.Context, text string, s *Session) (*Result, error)
	address() string
	close()
}

// New returns a session running statements in process against cat. Its
// managed tables (CREATE TABLE without LOCATION) live in a temporary
// warehouse directory that Close removes, unless catalog.warehouse is
// set.
func New(cat *catalog.Catalog) *Session {
	return &Session{Settings: engine.NewSettings(), backend: &local{engine: &engine.Engine{Catalog: cat, ShareSubplans: true, Warehouse: engine.TempWarehouse()}}}
}

// Execute runs one statement (text may hold exactly one). The caller must
// Close the result.
func (s *Session) Execute(ctx context.Context, text string) (*Result, error) {
	return s.backend.execute(ctx, text, s)
}

// Fork returns a session with default settings of its own that runs its
// statements over s's connection (or engine), so that many sessions cost
// one connection; the Flight SQL endpoint makes one per client. Closing a
// fork does nothing; closing s closes the connection every fork uses. A
// fork is used by one goroutine at a time, as any session; forks of one
// session may run at the same time.
func (s *Session) Fork() *Session {
	return &Session{Settings: engine.NewSettings(), backend: shared{s.backend}}
}

// shared is a backend borrowed from another session, which closes it.
type shared struct{ backend }

func (shared) close() {}

// Address is the scheduler's address, or "" for an in-process session.
func (s *Session) Address() string { return s.backend.address() }

// Close releases connections.
func (s *Session) Close() { s.backend.close() }

// TableNames lists tables and views (for completion and .tables).
func (s *Session) TableNames(ctx context.Context) ([]string, error) {
	rows, err := s.queryStrings(ctx, "SHOW TABLES")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out, nil
}

// ColumnNames lists a table's columns.
func (s *Session) ColumnNames(ctx context.Context, table string) ([]string, error) {
	rows, err := s.queryStrings(ctx, "DESCRIBE "+table)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0]
	}
	return out, nil
}

func (s *Session) queryStrings(ctx context.Context, text string) ([][]string, error) {
	res, err := s.Execute(ctx, text)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var rows [][]string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c], _ = render.FormatValue(b.Column(c), r)
			}
			rows = append(rows, row)
		}
		b.Release()
	}
}

// local runs statements on an in-process engine.
type local struct {
	engine *engine.Engine
	// Alloc allocates query memory; memory.DefaultAllocator when nil.
	alloc memory.Allocator
}

func (l *local) address() string { return "" }

// close removes the temporary warehouse, with the files of the managed
// tables in it.
func (l *local) close() { _ = l.engine.Warehouse.Close() }

// execute plans and starts a statement in this process. A panic in query
// code (planning here, operators in Next) fails the statement with an
// internal error instead of taking the shell down.
func (l *local) execute(ctx context.Context, text string, s *Session) (_ *Result, err error) {
	defer physical.CatchPanic(&err)
	start := time.Now()
	out, err := l.engine.Prepare(text, s.Settings)
	if err != nil {
		return nil, err
	}
	switch {
	case out.Rows != nil:
		return &Result{Schema: out.Rows.Schema(), stream: &batchStream{batches: []arrow.RecordBatch{out.Rows}}}, nil
	case out.Query != nil && out.Analyze:
		return l.analyze(ctx, out.Query, s, start)
	case out.Query != nil && out.Query.Write != nil:
		return l.runWrite(ctx, out.Query, s, start)
	case out.Query != nil:
		return l.runQuery(ctx, out.Query, s, start)
	}
	return messageResult(out.Message), nil
}

func (l *local) runQuery(ctx context.Context, q *engine.Query, s *Session, start time.Time) (*Result, error) {
	op, tc := l.task(q, s)
	stream, err := op.Execute(ctx, 0, tc)
	if err != nil {
		tc.Memory.Release()
		return nil, err
	}
	// What the query's operators still hold when it is closed goes back to
	// the process's pool.
	res := &Result{Schema: q.Schema, onDone: func() { tc.Memory.Release() }}
	res.stream = &timed{Stream: &renamed{Stream: stream, schema: q.Schema}, start: start, stats: &res.statsVal}
	res.stats = &res.statsVal
	return res, nil
}

// runWrite runs a writing statement to its end before returning: its
// files are committed and the catalog updated (Write.Finish) by then,
// exactly as a cluster does before the job succeeds.
func (l *local) runWrite(ctx context.Context, q *engine.Query, s *Session, start time.Time) (_ *Result, err error) {
	op, tc := l.task(q, s)
	tc.Commit = &physical.CommitList{}
	defer func() {
		if ferr := q.Write.Finish(err == nil, tc.Commit.Files()); err == nil && ferr != nil {
			err = ferr
		}
	}()
	defer tc.Memory.Release()
	stream, err := op.Execute(ctx, 0, tc)
	if err != nil {
		return nil, err
	}
	// Closed before Finish runs: every task of the write has ended.
	defer stream.Close()
	var batches []arrow.RecordBatch
	defer func() {
		if err != nil {
			releaseAll(batches)
		}
	}()
	for {
		b, nerr := stream.Next(ctx)
		if errors.Is(nerr, io.EOF) {
			break
		}
		if nerr != nil {
			return nil, nerr
		}
		batches = append(batches, b)
	}
	out := &Result{Schema: q.Schema, stream: &batchStream{batches: batches}}
	out.statsVal = Stats{Total: time.Since(start)}
	for _, b := range batches {
		out.statsVal.Rows += b.NumRows()
	}
	out.stats = &out.statsVal
	return out, nil
}

func releaseAll(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// task returns the query's root, whose one partition is the result, and
// the context to run it in.
func (l *local) task(q *engine.Query, s *Session) (physical.Operator, *physical.TaskContext) {
	op := q.Physical
	if op.OutputPartitioning().Count > 1 {
		op = physical.NewCoalescePartitions(op)
	}
	alloc := l.alloc
	if alloc == nil {
		alloc = mempool.Allocator
	}
	tc := &physical.TaskContext{
		Alloc: alloc,
		Memory: mempool.NewPool("the query", s.Settings.Int("execution.memory_limit"), processPool()).
			WithHint("SET execution.memory_limit to a larger value"),
		BatchSize: int(s.Settings.Int("execution.batch_size")),
		// Sorts spill to the system's temporary directory (TMPDIR).
		SpillDir: os.TempDir(),
	}
	// The caller reads the root's one partition.
	tc.ShareScans(op, []int{0})
	return op, tc
}

// processPool is what the in-process queries of this process reserve
// together: mempool.DefaultLimit, so that a query that needs more
// fails with "resources exhausted" instead of the shell running out of
// memory (execution.memory_limit caps each query further).
var processPool = sync.OnceValue(func() *mempool.Pool {
	return mempool.NewPool("this process", mempool.DefaultLimit(), nil).
		WithHint("the process takes at most three quarters of the machine's memory for its queries")
})

// timed records time to first row, total time and rows of a stream.
type timed struct {
	physical.Stream
	start time.Time
	stats *Stats
}

func (t *timed) Next(ctx context.Context) (_ arrow.RecordBatch, err error) {
	defer physical.CatchPanic(&err)
	b, err := t.Stream.Next(ctx)
	if err == nil {
		if t.stats.FirstRow == 0 {
			t.stats.FirstRow = time.Since(t.start)
		}
		t.stats.Rows += b.NumRows()
	} else if errors.Is(err, io.EOF) && t.stats.Total == 0 {
		t.stats.Total = time.Since(t.start)
	}
	return b, err
}
