package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"sluice/catalog"
	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/render"
	"sluice/rpc"
	"sluice/session"
)

// testClient is a minimal cluster client for these tests, standing in for
// session.Connect until the remote session lands: it runs a statement,
// follows its status stream and reads the final stage's files over Flight.
type testClient struct {
	t     testing.TB
	sched rpc.SchedulerServiceClient
	env   *exchange.Env
}

// clusterSettings are sent with every statement: blocking mode (the only
// one the scheduler runs so far) and enough partitions for several tasks
// per stage.
var clusterSettings = map[string]string{
	"execution.mode":              "blocking",
	"execution.target_partitions": "4",
}

func newTestClient(t testing.TB, addr string, sec *rpc.Security) *testClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(sec.DialOptions(), rpc.SessionCredentials(rpc.RandomHex(16)))...)
	if err != nil {
		t.Fatal(err)
	}
	env := &exchange.Env{Clients: exchange.NewClientPool(sec)}
	t.Cleanup(func() {
		env.Clients.Close()
		conn.Close()
	})
	return &testClient{t: t, sched: rpc.NewSchedulerServiceClient(conn), env: env}
}

// runningJob is a submitted statement whose status stream is followed.
type runningJob struct {
	stream rpc.SchedulerService_ExecuteQueryClient
	last   *rpc.JobStatus
}

// placed follows a pipelined job's statuses until one says where its
// results are read (FinalProducers), and returns it.
func (j *runningJob) placed(t testing.TB) *rpc.JobStatus {
	t.Helper()
	for len(j.last.FinalProducers) == 0 {
		if finalState(j.last.State) {
			t.Fatalf("pipelined job ended before its results were read: %v", j.last)
		}
		var err error
		if j.last, err = j.stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	return j.last
}

// submit sends a statement and waits for its first status.
func (c *testClient) submit(ctx context.Context, sql string, extra map[string]string) (*runningJob, error) {
	settings := maps.Clone(clusterSettings)
	maps.Copy(settings, extra)
	stream, err := c.sched.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: sql, Settings: settings})
	if err != nil {
		return nil, err
	}
	st, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	return &runningJob{stream: stream, last: st}, nil
}

func (j *runningJob) id() string { return j.last.JobId }

// wait follows the status stream to the job's end; a failed or cancelled
// job is an error carrying its message.
func (j *runningJob) wait() (*rpc.JobStatus, error) {
	for !finalState(j.last.State) {
		st, err := j.stream.Recv()
		if err != nil {
			return j.last, fmt.Errorf("status stream of job %s: %w", j.last.JobId, err)
		}
		j.last = st
	}
	if j.last.State != rpc.JobState_JOB_SUCCESSFUL {
		return j.last, fmt.Errorf("job %s %s: %s", j.last.JobId, j.last.State, j.last.GetError().GetMessage())
	}
	return j.last, nil
}

func finalState(s rpc.JobState) bool {
	return s == rpc.JobState_JOB_SUCCESSFUL || s == rpc.JobState_JOB_FAILED || s == rpc.JobState_JOB_CANCELLED
}

// query runs sql to the end and returns its rows (see formatRows), then
// releases the job.
func (c *testClient) query(ctx context.Context, sql string, extra map[string]string) ([]string, *rpc.JobStatus, error) {
	j, err := c.submit(ctx, sql, extra)
	if err != nil {
		return nil, nil, err
	}
	st, err := j.wait()
	if err != nil {
		return nil, st, err
	}
	rows, err := c.read(ctx, st)
	if err != nil {
		return nil, st, err
	}
	if _, err := c.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
		return nil, st, fmt.Errorf("releasing job %s: %w", st.JobId, err)
	}
	return rows, st, nil
}

// read returns a successful job's rows: inline ones, or the final stage's
// partitions in order, read over Flight.
func (c *testClient) read(ctx context.Context, st *rpc.JobStatus) ([]string, error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(c.t, 0)
	if len(st.InlineResult) > 0 {
		r, err := ipc.NewReader(bytes.NewReader(st.InlineResult), ipc.WithAllocator(mem))
		if err != nil {
			return nil, err
		}
		defer r.Release()
		var rows []string
		for r.Next() {
			rows = append(rows, formatRows(r.RecordBatch())...)
		}
		return rows, r.Err()
	}
	if st.Schema == nil {
		return nil, nil
	}
	schema, err := expr.SchemaFromProto(st.Schema)
	if err != nil {
		return nil, err
	}
	var parts [][]*rpc.PartitionLocation
	for _, l := range st.FinalLocations {
		for int(l.Partition) >= len(parts) {
			parts = append(parts, nil)
		}
		parts[l.Partition] = append(parts[l.Partition], l)
	}
	reader := exchange.NewShuffleReader(int(st.FinalStageId), schema, parts)
	tc := &physical.TaskContext{Alloc: mem, Memory: mempool.NewPool("client", 0, nil), BatchSize: physical.DefaultBatchSize,
		Exchange: &exchange.TaskEnv{Env: c.env, JobID: st.JobId, JobSecret: st.JobSecret}}
	var rows []string
	for p := range parts {
		s, err := reader.Execute(ctx, p, tc)
		if err != nil {
			return nil, err
		}
		got, err := drain(ctx, s)
		if err != nil {
			return nil, err
		}
		rows = append(rows, got...)
	}
	return rows, nil
}

func drain(ctx context.Context, s physical.Stream) ([]string, error) {
	defer s.Close()
	var rows []string
	for {
		b, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, formatRows(b)...)
		b.Release()
	}
}

// formatRows renders each row as its values joined by "|".
func formatRows(b arrow.RecordBatch) []string {
	out := make([]string, b.NumRows())
	vals := make([]string, b.NumCols())
	for r := range out {
		for c := range vals {
			v, ok := render.FormatValue(b.Column(c), r)
			if !ok {
				v = "NULL"
			}
			vals[c] = v
		}
		out[r] = strings.Join(vals, "|")
	}
	return out
}

// localRows runs sql on the in-process engine, the reference the cluster's
// answers are compared with.
func localRows(t testing.TB, cat *catalog.Catalog, sql string) []string {
	t.Helper()
	ctx := context.Background()
	s := session.New(cat)
	defer s.Close()
	for k, v := range clusterSettings {
		if k != "execution.mode" {
			if err := s.Settings.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := s.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("local %s: %v", sql, err)
	}
	defer res.Close()
	var rows []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatalf("local %s: %v", sql, err)
		}
		rows = append(rows, formatRows(b)...)
		b.Release()
	}
}

// sameRows compares results; unordered results are compared sorted.
func sameRows(t testing.TB, what string, got, want []string, ordered bool) {
	t.Helper()
	if !ordered {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if len(want) == 0 {
		t.Fatalf("%s: the reference result is empty; the test would prove nothing", what)
	}
	if !slices.Equal(got, want) {
		n := min(len(got), len(want), 10)
		t.Fatalf("%s: got %d rows, want %d\nfirst got:  %q\nfirst want: %q", what, len(got), len(want), got[:n], want[:n])
	}
}
