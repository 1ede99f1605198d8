package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"sluice/engine"
	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/rpc"
	"sluice/sql"
)

// remote runs statements on a scheduler over gRPC and reads results from
// executors over Arrow Flight.
type remote struct {
	addr   string
	conn   *grpc.ClientConn
	client rpc.SchedulerServiceClient
	env    *exchange.Env
}

// Connect returns a session using the scheduler at addr, without a token
// or TLS: for a cluster that asks for neither.
func Connect(addr string) (*Session, error) {
	return ConnectWith(addr, nil)
}

// ConnectWith returns a session using the scheduler at addr, presenting
// sec's token and TLS setup to the scheduler and to the executors it
// reads results from (nil: neither). The session makes a secret of its
// own, sent with every call: the scheduler binds the session's jobs to
// it, so no other session can follow, cancel or release them.
func ConnectWith(addr string, sec *rpc.Security) (*Session, error) {
	opts := append(sec.DialOptions(), rpc.SessionCredentials(rpc.RandomHex(16)), rpc.KeepaliveDialOption(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to scheduler %s: %w", addr, err)
	}
	r := &remote{addr: addr, conn: conn, client: rpc.NewSchedulerServiceClient(conn),
		env: &exchange.Env{Clients: exchange.NewClientPool(sec), MaxFetchBytes: 64 << 20}}
	return &Session{Settings: engine.NewSettings(), backend: r}, nil
}

func (r *remote) close() {
	r.env.Clients.Close()
	r.conn.Close()
}

// Address is the scheduler's address.
func (r *remote) address() string { return r.addr }

func (r *remote) execute(ctx context.Context, text string, s *Session) (*Result, error) {
	start := time.Now()
	jctx, cancel := context.WithCancel(context.Background())
	stream, err := r.client.ExecuteQuery(jctx, &rpc.ExecuteQueryRequest{Sql: text, Settings: s.Settings.Map()})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("scheduler %s: %w", r.addr, err)
	}
	j := &job{r: r, stream: stream, cancelStream: cancel, progress: s.OnProgress}
	st, err := j.waitReady(ctx)
	if err != nil {
		j.cancelStream()
		return nil, err
	}
	if st.Settings != nil {
		if ns, err := engine.SettingsFromMap(st.Settings); err == nil {
			s.Settings = ns
		}
	}
	switch {
	case len(st.InlineResult) > 0:
		j.cancelStream()
		return inlineResult(st.InlineResult)
	case st.Schema == nil:
		j.cancelStream()
		return messageResult(st.Message), nil
	}
	schema, err := expr.SchemaFromProto(st.Schema)
	if err != nil {
		j.cancelStream()
		return nil, err
	}
	if st.Analyze {
		return j.analyze(ctx, st, schema, s, start)
	}
	return j.read(ctx, st, schema, s, start)
}

// job follows one job's status stream.
type job struct {
	r            *remote
	stream       rpc.SchedulerService_ExecuteQueryClient
	cancelStream context.CancelFunc
	id           string

	progress func(Progress)

	mu   sync.Mutex
	last *rpc.JobStatus
}

func progressOf(p *rpc.JobProgress) Progress {
	return Progress{StagesDone: int(p.StagesDone), StagesTotal: int(p.StagesTotal),
		TasksRunning: int(p.TasksRunning), TasksDone: int(p.TasksDone), TasksTotal: int(p.TasksTotal), Rows: p.RowsOut}
}

// waitReady reads statuses until the job has results to read: a finished
// statement, or a running pipelined job with its final producers placed.
// Ctrl-C (ctx) cancels the job on the cluster.
func (j *job) waitReady(ctx context.Context) (*rpc.JobStatus, error) {
	type recv struct {
		st  *rpc.JobStatus
		err error
	}
	ch := make(chan recv, 1)
	for {
		go func() {
			st, err := j.stream.Recv()
			ch <- recv{st, err}
		}()
		select {
		case <-ctx.Done():
			j.cancelJob()
			<-ch
			return nil, fmt.Errorf("query cancelled")
		case rv := <-ch:
			if rv.err != nil {
				if errors.Is(rv.err, io.EOF) {
					return nil, fmt.Errorf("scheduler ended the status stream before the job finished")
				}
				return nil, fmt.Errorf("scheduler %s: %w", j.r.addr, rv.err)
			}
			st := rv.st
			j.id = st.JobId
			j.setLast(st)
			if j.progress != nil && st.Progress != nil {
				j.progress(progressOf(st.Progress))
			}
			switch st.State {
			case rpc.JobState_JOB_FAILED:
				return nil, userError(st.Error)
			case rpc.JobState_JOB_CANCELLED:
				return nil, fmt.Errorf("query cancelled")
			case rpc.JobState_JOB_SUCCESSFUL:
				return st, nil
			case rpc.JobState_JOB_RUNNING:
				if len(st.FinalProducers) > 0 {
					return st, nil
				}
			}
		}
	}
}

func (j *job) setLast(st *rpc.JobStatus) {
	j.mu.Lock()
	j.last = st
	j.mu.Unlock()
}

func (j *job) cancelJob() {
	if j.id == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	j.r.client.CancelJob(cctx, &rpc.CancelJobRequest{JobId: j.id})
}

// read starts reading the final stage's partitions; for a pipelined job it
// keeps following the status stream so a failure surfaces even if no data
// stream breaks.
func (j *job) read(ctx context.Context, st *rpc.JobStatus, schema *arrow.Schema, s *Session, start time.Time) (*Result, error) {
	var reader physical.Operator
	if len(st.FinalProducers) > 0 {
		parts := make([][]*rpc.PipelinedProducer, len(st.FinalProducers))
		for i, p := range st.FinalProducers {
			parts[i] = p.Producers
		}
		reader = exchange.NewPipelinedReader(st.JobId, int(st.FinalStageId), schema, parts)
	} else {
		reader = exchange.NewShuffleReader(int(st.FinalStageId), schema, groupLocations(st.FinalLocations))
	}
	op := reader
	if op.OutputPartitioning().Count != 1 {
		op = physical.NewCoalescePartitions(reader)
	}
	rctx, rcancel := context.WithCancel(ctx)
	tc := &physical.TaskContext{
		Alloc:     memory.DefaultAllocator,
		Memory:    mempool.NewPool("client", 0, nil),
		BatchSize: int(s.Settings.Int("execution.batch_size")),
		// The job's secret goes into the tickets: executors serve the
		// job's results to no one else. A pipelined job's final queues
		// want their capabilities too.
		Exchange: &exchange.TaskEnv{Env: j.r.env, JobID: st.JobId, JobSecret: st.JobSecret,
			Capabilities: exchange.CapabilitiesOf(st.FinalCapabilities)},
	}
	stream, err := op.Execute(rctx, 0, tc)
	if err != nil {
		rcancel()
		j.cancelJob()
		j.cancelStream()
		return nil, err
	}
	w := &jobStream{job: j, inner: stream, ctx: ctx, cancelRead: rcancel, start: start, failed: make(chan error, 1), write: st.Write}
	if st.State != rpc.JobState_JOB_SUCCESSFUL {
		w.watchers.Add(1)
		go w.watch()
	}
	res := &Result{Schema: schema, stream: w, stats: &w.stats}
	return res, nil
}

// groupLocations arranges final-stage locations by output partition.
func groupLocations(locs []*rpc.PartitionLocation) [][]*rpc.PartitionLocation {
	n := 0
	for _, l := range locs {
		n = max(n, int(l.Partition)+1)
	}
	out := make([][]*rpc.PartitionLocation, max(n, 1))
	for _, l := range locs {
		out[l.Partition] = append(out[l.Partition], l)
	}
	for _, p := range out {
		sort.Slice(p, func(a, b int) bool { return p[a].MapPartition < p[b].MapPartition })
	}
	return out
}

// jobStream is the result stream of a cluster query.
type jobStream struct {
	job        *job
	inner      physical.Stream
	ctx        context.Context
	cancelRead context.CancelFunc
	start      time.Time
	failed     chan error
	watchers   sync.WaitGroup
	stats      Stats
	done       bool
	// final is the job's last status, fetched by Close.
	final *rpc.JobStatus
	// write: the job writes files, and its count is reported only once
	// the job has succeeded (committed, catalog updated).
	write bool
}

// awaitWrite waits for a writing job's final state once its result is
// read, and returns its error if it did not succeed.
func (w *jobStream) awaitWrite(ctx context.Context) error {
	if err := w.awaitEnd(ctx); err != nil {
		return err
	}
	w.job.mu.Lock()
	st := w.job.last
	w.job.mu.Unlock()
	if st != nil && st.State == rpc.JobState_JOB_SUCCESSFUL {
		return nil
	}
	// The status stream broke before the end: ask.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		fresh, err := w.job.r.client.GetJobStatus(cctx, &rpc.GetJobStatusRequest{JobId: w.job.id})
		if err != nil {
			return fmt.Errorf("the write's outcome is unknown: %w", err)
		}
		switch fresh.State {
		case rpc.JobState_JOB_SUCCESSFUL:
			return nil
		case rpc.JobState_JOB_FAILED:
			return userError(fresh.Error)
		case rpc.JobState_JOB_CANCELLED:
			return fmt.Errorf("query cancelled")
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("the write's outcome is unknown: %w", cctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watch follows the status stream of a running (pipelined) job.
func (w *jobStream) watch() {
	defer w.watchers.Done()
	for {
		st, err := w.job.stream.Recv()
		if err != nil {
			return
		}
		w.job.setLast(st)
		if w.job.progress != nil && st.Progress != nil {
			w.job.progress(progressOf(st.Progress))
		}
		switch st.State {
		case rpc.JobState_JOB_FAILED:
			w.failed <- userError(st.Error)
			w.cancelRead()
			return
		case rpc.JobState_JOB_CANCELLED:
			w.failed <- fmt.Errorf("query cancelled")
			w.cancelRead()
			return
		case rpc.JobState_JOB_SUCCESSFUL:
			return
		}
	}
}

func (w *jobStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	b, err := w.inner.Next(ctx)
	if err == nil {
		if w.stats.FirstRow == 0 {
			w.stats.FirstRow = time.Since(w.start)
		}
		w.stats.Rows += b.NumRows()
		return b, nil
	}
	select {
	case ferr := <-w.failed:
		return nil, ferr
	default:
	}
	if errors.Is(err, io.EOF) && w.write {
		if werr := w.awaitWrite(ctx); werr != nil {
			return nil, werr
		}
	}
	if errors.Is(err, io.EOF) {
		w.done = true
		w.stats.Total = time.Since(w.start)
		return nil, io.EOF
	}
	if w.ctx.Err() != nil {
		w.job.cancelJob()
		return nil, fmt.Errorf("query cancelled")
	}
	// A broken data stream: prefer the job's own error when it has one. A
	// failed job's queues are released, so the read may break before the
	// status stream delivers the failure: ask the scheduler.
	if jerr := w.jobError(); jerr != nil {
		return nil, jerr
	}
	w.job.cancelJob()
	return nil, err
}

// jobErrorWait is how long a broken data stream waits for the job's status
// to say why.
const jobErrorWait = time.Second

// jobError returns the job's error if the scheduler has it failed or
// cancelled, or nil. A producer's failure breaks its consumers' streams
// before the executor's report has reached the scheduler, so the status
// stream gets a moment to deliver the job's own error (the one the user
// needs) before the scheduler is asked.
func (w *jobStream) jobError() error {
	select {
	case ferr := <-w.failed:
		return ferr
	case <-time.After(jobErrorWait):
	}
	if w.job.id == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := w.job.r.client.GetJobStatus(cctx, &rpc.GetJobStatusRequest{JobId: w.job.id})
	if err != nil {
		return nil
	}
	switch st.State {
	case rpc.JobState_JOB_FAILED:
		return userError(st.Error)
	case rpc.JobState_JOB_CANCELLED:
		return fmt.Errorf("query cancelled")
	}
	return nil
}

func (w *jobStream) Close() {
	w.inner.Close()
	w.cancelRead()
	if !w.done {
		w.job.cancelJob()
	}
	w.job.cancelStream()
	w.watchers.Wait()
	w.job.mu.Lock()
	st := w.job.last
	w.job.mu.Unlock()
	if w.job.id != "" {
		// The job's own last word: stages, tasks and where they ran.
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if fresh, err := w.job.r.client.GetJobStatus(cctx, &rpc.GetJobStatusRequest{JobId: w.job.id}); err == nil {
			st = fresh
		}
		cancel()
	}
	if st != nil && st.Progress != nil {
		w.stats.Stages = int(st.Progress.StagesTotal)
		w.stats.Tasks = int(st.Progress.TasksTotal)
	}
	if st != nil {
		w.stats.Report = st.Stages
	}
	w.final = st
	if w.job.id != "" {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w.job.r.client.ReleaseJob(cctx, &rpc.ReleaseJobRequest{JobId: w.job.id})
		cancel()
	}
}

// userError turns the scheduler's error into the shell's error types.
func userError(e *rpc.UserError) error {
	if e == nil {
		return fmt.Errorf("query failed")
	}
	switch e.Kind {
	case "syntax", "bind", "type":
		return &sql.Error{Kind: e.Kind, Msg: e.Message, Line: int(e.Line), Column: int(e.Column), Near: e.Near, Hint: e.Hint}
	}
	if e.Detail != "" {
		return &DetailedError{Msg: e.Message, Detail: e.Detail}
	}
	return errors.New(e.Message)
}

// DetailedError is an error of the query itself whose message is what the
// user needs; Detail says where it happened (stage, task, executor,
// operators), for .explain and --verbose.
type DetailedError struct {
	Msg, Detail string
}

func (e *DetailedError) Error() string { return e.Msg }

// ErrorDetail is where the error happened.
func (e *DetailedError) ErrorDetail() string { return e.Detail }

// inlineResult decodes a small result sent as an Arrow IPC stream.
func inlineResult(b []byte) (*Result, error) {
	rd, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decoding result: %w", err)
	}
	defer rd.Release()
	var batches []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		batches = append(batches, rec)
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return &Result{Schema: rd.Schema(), stream: &batchStream{batches: batches}}, nil
}

func (r *remote) clusterState(ctx context.Context) (*rpc.ClusterState, error) {
	return r.client.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
}
