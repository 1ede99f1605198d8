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
// executors over Arrow Flight; in the cluster's own process
// (ConnectInProcess) it does both directly.
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
	return connect(addr, sec, nil)
}

// InProcess is a cluster running in this process (cluster.Embedded): a
// session reaches its scheduler with Go calls and reads the final stage
// from its executors directly (blocking outputs and pipelined queues),
// instead of over loopback gRPC and Flight.
type InProcess interface {
	SchedulerAddr() string
	Security() *rpc.Security
	// SchedulerClient returns the client a session whose key is
	// sessionKey calls the scheduler with, given its gRPC client.
	SchedulerClient(client rpc.SchedulerServiceClient, sessionKey string) rpc.SchedulerServiceClient
	// Peers are the executors whose outputs the session reads directly
	// (nil: over Flight).
	Peers() *exchange.Peers
}

// ConnectInProcess returns a session using the cluster c of this process.
func ConnectInProcess(c InProcess) (*Session, error) {
	return connect(c.SchedulerAddr(), c.Security(), c)
}

func connect(addr string, sec *rpc.Security, in InProcess) (*Session, error) {
	key := rpc.RandomHex(16)
	opts := append(sec.DialOptions(), rpc.SessionCredentials(key), rpc.KeepaliveDialOption(), rpc.ReconnectDialOption(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to scheduler %s: %w", addr, err)
	}
	r := &remote{addr: addr, conn: conn, client: rpc.NewSchedulerServiceClient(conn),
		env: &exchange.Env{Clients: exchange.NewClientPool(sec), MaxFetchBytes: 64 << 20}}
	if in != nil {
		r.client = in.SchedulerClient(r.client, key)
		r.env.Peers = in.Peers()
	}
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
	j := &job{r: r, stream: stream, cancelStream: cancel, progress: s.OnProgress, onNotice: s.OnNotice}
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
	onNotice func(string)

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
			if ready, err := j.follow(rv.st); ready || err != nil {
				return rv.st, err
			}
		}
	}
}

// follow records a status of the job (or of the job retrying it) and says
// whether its results can be read now, or the error it ended with.
func (j *job) follow(st *rpc.JobStatus) (ready bool, err error) {
	j.id = st.JobId
	j.setLast(st)
	if j.progress != nil && st.Progress != nil {
		j.progress(progressOf(st.Progress))
	}
	switch st.State {
	case rpc.JobState_JOB_FAILED:
		return false, userError(st.Error)
	case rpc.JobState_JOB_CANCELLED:
		return false, fmt.Errorf("query cancelled")
	case rpc.JobState_JOB_SUCCESSFUL:
		return true, nil
	case rpc.JobState_JOB_RUNNING:
		return len(st.FinalProducers) > 0, nil
	}
	return false, nil
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
// stream breaks, and a retry of the job is followed.
func (j *job) read(ctx context.Context, st *rpc.JobStatus, schema *arrow.Schema, s *Session, start time.Time) (*Result, error) {
	w := &jobStream{job: j, schema: schema, batchSize: int(s.Settings.Int("execution.batch_size")),
		claim: s.Settings.Int("execution.query_retries") > 0, ctx: ctx, start: start}
	w.noteAttempt(st)
	if err := w.open(st); err != nil {
		j.cancelJob()
		j.cancelStream()
		return nil, err
	}
	res := &Result{Schema: w.schema, stream: w, stats: &w.stats}
	return res, nil
}

// open starts reading the final partitions st names and, unless the job
// already succeeded, following its status stream.
func (w *jobStream) open(st *rpc.JobStatus) error {
	var reader physical.Operator
	if len(st.FinalProducers) > 0 {
		parts := make([][]*rpc.PipelinedProducer, len(st.FinalProducers))
		for i, p := range st.FinalProducers {
			parts[i] = p.Producers
		}
		reader = exchange.NewPipelinedReader(st.JobId, int(st.FinalStageId), w.schema, parts)
	} else {
		reader = exchange.NewShuffleReader(int(st.FinalStageId), w.schema, groupLocations(st.FinalLocations))
	}
	op := reader
	if op.OutputPartitioning().Count != 1 {
		op = physical.NewCoalescePartitions(reader)
	}
	rctx, rcancel := context.WithCancel(w.ctx)
	tc := &physical.TaskContext{
		Alloc:     memory.DefaultAllocator,
		Memory:    mempool.NewPool("client", 0, nil),
		BatchSize: w.batchSize,
		// The job's secret goes into the tickets: executors serve the
		// job's results to no one else. A pipelined job's final queues
		// want their capabilities too.
		Exchange: &exchange.TaskEnv{Env: w.job.r.env, JobID: st.JobId, JobSecret: st.JobSecret,
			Capabilities: exchange.CapabilitiesOf(st.FinalCapabilities)},
	}
	stream, err := op.Execute(rctx, 0, tc)
	if err != nil {
		rcancel()
		return err
	}
	w.inner, w.cancelRead = stream, rcancel
	// Only a pipelined job's rows are read while it may still fail; a
	// blocking job's are read once it succeeded.
	w.pipelined = len(st.FinalProducers) > 0
	w.write = st.Write
	w.failed, w.retried, w.watchEnded = make(chan error, 1), make(chan *rpc.JobStatus, 1), make(chan struct{})
	if st.State != rpc.JobState_JOB_SUCCESSFUL {
		w.watchers.Add(1)
		go w.watch(st.JobId, w.failed, w.retried, w.watchEnded, rcancel)
	} else {
		close(w.watchEnded)
	}
	return nil
}

// noticeQueued is the shortest wait for vcores the shell is told about.
const noticeQueued = time.Second

// noteAttempt records the attempt and notices a status carries.
func (w *jobStream) noteAttempt(st *rpc.JobStatus) {
	w.stats.Attempts = max(int(st.Attempt), 1)
	if st.ModeChoice != "" {
		w.stats.Mode = st.ModeChoice
	}
	w.stats.Queued = time.Duration(st.QueuedMs) * time.Millisecond
	w.stats.Admission = st.Admission
	if w.stats.Queued >= noticeQueued && st.Admission != "" {
		// A wait the user would notice is explained: the cluster was busy.
		msg := "query " + st.Admission
		w.stats.Notices = append(w.stats.Notices, msg)
		if w.job.onNotice != nil {
			w.job.onNotice(msg)
		}
	}
	if st.RetryNotice != "" {
		w.stats.Notices = append(w.stats.Notices, st.RetryNotice)
		if w.job.onNotice != nil {
			w.job.onNotice(st.RetryNotice)
		}
	}
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
//
// Whole-query retry: a pipelined job's rows are read while it runs, and
// the scheduler may run a job that lost an executor again, as a new job,
// only while none of its rows reached the user. The stream decides which
// with the scheduler: before handing out its first row it claims delivery
// (GetJobStatus with claim_delivery), which the scheduler grants under the
// same lock with which it decides retries. Granted, the job is never
// retried and a failure is final. Refused (the job had failed), the
// stream drops what it read and, if the status stream moves on to a new
// job, reads that one from the start; so a row is never shown twice or
// left out.
type jobStream struct {
	job       *job
	schema    *arrow.Schema
	batchSize int
	// claim: the session allows retries, so the first row is claimed.
	claim      bool
	inner      physical.Stream
	ctx        context.Context
	cancelRead context.CancelFunc
	start      time.Time
	pipelined  bool
	// delivered: a row was handed out (claimed when claim is set).
	delivered bool
	// The current attempt's watcher reports a final failure on failed, a
	// new job (a retry) on retried, and closes watchEnded when it stops.
	failed     chan error
	retried    chan *rpc.JobStatus
	watchEnded chan struct{}
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

// watch follows the status stream of a running (pipelined) job id.
func (w *jobStream) watch(id string, failed chan<- error, retried chan<- *rpc.JobStatus, ended chan<- struct{}, cancelRead context.CancelFunc) {
	defer w.watchers.Done()
	defer close(ended)
	for {
		st, err := w.job.stream.Recv()
		if err != nil {
			return
		}
		if st.JobId != id {
			// The scheduler runs the query again as a new job: this
			// attempt's reads stop, and Next starts over from the new one.
			retried <- st
			cancelRead()
			return
		}
		w.job.setLast(st)
		if w.job.progress != nil && st.Progress != nil {
			w.job.progress(progressOf(st.Progress))
		}
		switch st.State {
		case rpc.JobState_JOB_FAILED:
			failed <- userError(st.Error)
			cancelRead()
			return
		case rpc.JobState_JOB_CANCELLED:
			failed <- fmt.Errorf("query cancelled")
			cancelRead()
			return
		case rpc.JobState_JOB_SUCCESSFUL:
			return
		}
	}
}

func (w *jobStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if w.inner == nil {
			return nil, errors.New("the query's retry could not be read (its error was returned before)")
		}
		b, err := w.inner.Next(ctx)
		if err == nil {
			if !w.delivered && w.pipelined && w.claim && !w.claimDelivery() {
				// The job failed before this row could be handed out: drop
				// it and wait for the scheduler's retry, or its error.
				b.Release()
				if err := w.awaitRetry(ctx, nil); err != nil {
					return nil, err
				}
				continue
			}
			w.delivered = true
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
		if !w.delivered && w.pipelined && w.claim {
			// Nothing was handed out yet: the job may be run again.
			if err := w.awaitRetry(ctx, err); err != nil {
				return nil, err
			}
			continue
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
}

// claimDelivery asks the scheduler to record that the job's first row is
// handed out, which it grants unless the job already failed.
func (w *jobStream) claimDelivery() bool {
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := w.job.r.client.GetJobStatus(cctx, &rpc.GetJobStatusRequest{JobId: w.job.id, ClaimDelivery: true})
	return err == nil && (st.State == rpc.JobState_JOB_RUNNING || st.State == rpc.JobState_JOB_SUCCESSFUL)
}

// retryWait bounds how long a read that broke before any row was handed
// out waits for the scheduler to retry or fail the job: longer than an
// executor's default heartbeat timeout (10s), by which the scheduler
// notices any executor lost.
const retryWait = 15 * time.Second

// awaitRetry waits, after the job's read broke (readErr) or its claim was
// refused (readErr nil) before any row was handed out, for the scheduler
// to run the query again or fail it. On a retry it starts reading the new
// job; otherwise it returns the error the user sees.
func (w *jobStream) awaitRetry(ctx context.Context, readErr error) error {
	var fe *exchange.FetchError
	if errors.As(readErr, &fe) && fe.ExecutorID != "" {
		// The scheduler may not know yet: tell it which executor did not
		// answer, so it checks at once rather than after the heartbeats.
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = w.job.r.client.GetJobStatus(cctx, &rpc.GetJobStatusRequest{JobId: w.job.id, UnreachableExecutor: fe.ExecutorID})
		cancel()
	}
	if readErr == nil {
		readErr = errors.New("the scheduler refused the result's first row without saying why")
	}
	timer := time.NewTimer(retryWait)
	defer timer.Stop()
	var st *rpc.JobStatus
	select {
	case st = <-w.retried:
	case ferr := <-w.failed:
		return ferr
	case <-ctx.Done():
		w.job.cancelJob()
		return fmt.Errorf("query cancelled")
	case <-w.watchEnded:
		// The watcher stopped; what it saw last, if anything, is waiting.
		select {
		case st = <-w.retried:
		case ferr := <-w.failed:
			return ferr
		default:
		}
	case <-timer.C:
	}
	if st != nil {
		// The failed attempt's reads end here; until the new attempt's
		// start, there is no stream to read or close.
		w.inner.Close()
		w.inner = nil
		w.cancelRead()
		w.watchers.Wait()
		w.noteAttempt(st)
		ready, err := w.job.follow(st)
		if err != nil {
			return err
		}
		if !ready {
			if st, err = w.job.waitReady(ctx); err != nil {
				return err
			}
		}
		return w.open(st)
	}
	// Neither a retry nor a failure came: as for a delivered row.
	if jerr := w.jobError(); jerr != nil {
		return jerr
	}
	w.job.cancelJob()
	return readErr
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

// endWait bounds how long Close waits, after the last row, for the job's
// status stream to say it succeeded.
const endWait = 5 * time.Second

func (w *jobStream) Close() {
	if w.inner != nil {
		w.inner.Close()
	}
	w.cancelRead()
	if !w.done {
		w.job.cancelJob()
	} else if w.watchEnded != nil {
		// Every row was read, but the last tasks' reports may still be on
		// their way to the scheduler: ending the status stream now would
		// cancel a job that is finishing. Wait for its success a while.
		select {
		case <-w.watchEnded:
		case <-time.After(endWait):
		}
	}
	w.job.cancelStream()
	w.watchers.Wait()
	w.job.mu.Lock()
	st := w.job.last
	w.job.mu.Unlock()
	if w.job.id != "" && (st == nil || st.State != rpc.JobState_JOB_SUCCESSFUL) {
		// The job's own last word: stages, tasks and where they ran. A
		// job whose stream brought its success has said it already (a
		// final status carries the whole report).
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
