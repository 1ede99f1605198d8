package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/rpc"
)

// TestMalformedRequests sends the scheduler's, an executor's and the
// Flight service's endpoints what a clumsy or hostile client might:
// empty, unknown, out-of-range and garbage requests. Each must be refused
// (or ignored) with a clear error, never a panic (the handlers recover,
// and a recovered panic reads "internal error"); afterwards the cluster
// still answers queries and no goroutine is left behind.
func TestMalformedRequests(t *testing.T) {
	checkGoroutines(t)
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2})
	ctx := testContext(t, 60*time.Second)
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	x := emb.Executors()[0]
	conn, err := grpc.NewClient(x.GRPCAddress(), emb.Security().DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := rpc.NewExecutorServiceClient(conn)

	// A finished job whose ids the requests below reuse.
	j, err := c.submit(ctx, "SELECT count(*) FROM orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	done, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	final := done.FinalLocations[0]

	check := func(t *testing.T, what string, err error, want ...codes.Code) {
		t.Helper()
		t.Logf("%s: %v", what, err)
		if err == nil {
			if len(want) > 0 {
				t.Errorf("%s: accepted, want %v", what, want)
			}
			return
		}
		msg := err.Error()
		if strings.Contains(msg, "internal error") || strings.Contains(msg, "panic") {
			t.Errorf("%s: %v", what, err)
		}
		if len(want) > 0 && !contains(want, status.Code(err)) {
			t.Errorf("%s: %v, want code %v", what, err, want)
		}
	}

	t.Run("scheduler", func(t *testing.T) {
		for _, sql := range []string{"", ";", "SELECT;", "\x00", "\xff\xfe", "SELECT 1; SELECT 2", strings.Repeat("(", 100000),
			"SELECT * FROM no_such_table", "SELECT 1/0", "SET execution.mode = 'nonsense'"} {
			_, _, err := c.query(ctx, sql, nil)
			check(t, "ExecuteQuery "+strings.ToValidUTF8(sql[:min(len(sql), 20)], "?"), err)
		}
		for _, settings := range []map[string]string{
			{"no.such.setting": "1"}, {"execution.target_partitions": "-1"}, {"execution.batch_size": "99999999999999999999"},
			{"execution.mode": ""}, {"execution.target_partitions": "\x00"},
		} {
			_, _, err := c.query(ctx, "SELECT 1", settings)
			check(t, "ExecuteQuery with bad settings", err)
			if err == nil {
				t.Errorf("settings %v accepted", settings)
			}
		}
		// A request over the message size limit fails at the transport.
		_, err := c.sched.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: "SELECT '" + strings.Repeat("x", 5<<20) + "'"})
		if err == nil {
			// The error may come with the first status instead.
			var s rpc.SchedulerService_ExecuteQueryClient
			s, err = c.sched.ExecuteQuery(ctx, &rpc.ExecuteQueryRequest{Sql: "SELECT '" + strings.Repeat("x", 5<<20) + "'"})
			if err == nil {
				_, err = s.Recv()
			}
		}
		check(t, "ExecuteQuery of 5 MiB", err)

		for _, id := range []string{"", "no-such-job", "../..", "\x00", done.JobId + "x"} {
			_, err := c.sched.CancelJob(ctx, &rpc.CancelJobRequest{JobId: id})
			check(t, "CancelJob "+id, err)
			_, err = c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: id})
			check(t, "GetJobStatus "+id, err, codes.NotFound, codes.InvalidArgument)
			_, err = c.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: id})
			check(t, "ReleaseJob "+id, err)
		}
		// Cancelling a finished job changes nothing.
		_, err = c.sched.CancelJob(ctx, &rpc.CancelJobRequest{JobId: done.JobId})
		check(t, "CancelJob of a finished job", err)
		st, err := c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: done.JobId})
		if err != nil || st.State != rpc.JobState_JOB_SUCCESSFUL {
			t.Errorf("the finished job after a cancel: %v %v", st.GetState(), err)
		}

		for _, req := range []*rpc.UpdateTaskStatusRequest{
			{},
			{ExecutorId: "ghost"},
			{ExecutorId: x.ID(), Statuses: []*rpc.TaskStatus{{}}},
			{ExecutorId: x.ID(), Statuses: []*rpc.TaskStatus{{Id: &rpc.TaskId{JobId: "no-such-job", StageId: 1}, State: rpc.TaskState_TASK_SUCCESSFUL}}},
			{ExecutorId: x.ID(), Statuses: []*rpc.TaskStatus{{Id: &rpc.TaskId{JobId: done.JobId, StageId: -1, TaskId: 1 << 30, Attempt: -5},
				State: rpc.TaskState_TASK_FAILED, Error: "forged"}}},
			{ExecutorId: x.ID(), Statuses: []*rpc.TaskStatus{{Id: &rpc.TaskId{JobId: done.JobId, StageId: final.StageId},
				State: rpc.TaskState(99), Outputs: []*rpc.PartitionLocation{{}}}}},
		} {
			_, err := c.sched.UpdateTaskStatus(ctx, req)
			check(t, "UpdateTaskStatus", err)
		}
		for _, meta := range []*rpc.ExecutorMetadata{nil, {}, {Id: "neg", Vcores: -4}, {Id: "huge", Vcores: 1 << 30},
			{Id: x.ID(), Vcores: 2}} {
			_, err := c.sched.RegisterExecutor(ctx, &rpc.RegisterExecutorRequest{Meta: meta})
			check(t, "RegisterExecutor", err)
		}
		_, err = c.sched.Heartbeat(ctx, &rpc.HeartbeatRequest{})
		check(t, "Heartbeat", err)
		_, err = c.sched.PollWork(ctx, &rpc.PollWorkRequest{ExecutorId: "ghost", FreeVcores: -1})
		check(t, "PollWork", err)
	})

	t.Run("executor", func(t *testing.T) {
		scan := &rpc.PhysicalPlan{Node: &rpc.PhysicalPlan_Limit{Limit: &rpc.LimitNode{}}}
		for _, task := range []*rpc.TaskDefinition{
			{},
			{Id: &rpc.TaskId{JobId: "../../etc", StageId: 1}, Plan: &rpc.PhysicalPlan{}},
			{Id: &rpc.TaskId{JobId: "forged", StageId: 1}, Plan: scan, Partitions: []int32{-1, 1 << 30}, Vcores: -3},
			{Id: &rpc.TaskId{JobId: done.JobId, StageId: final.StageId}, Plan: scan, Partitions: []int32{0}},
		} {
			_, err := exec.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{task}})
			check(t, "LaunchTasks", err)
		}
		_, err := exec.LaunchTasks(ctx, &rpc.LaunchTasksRequest{Tasks: []*rpc.TaskDefinition{nil}})
		check(t, "LaunchTasks of a nil task", err)
		for _, req := range []*rpc.CancelTasksRequest{{}, {JobId: "no-such-job"}, {Tasks: []*rpc.TaskId{nil, {}}}} {
			_, err := exec.CancelTasks(ctx, req)
			check(t, "CancelTasks", err)
		}
		for _, id := range []string{"", ".", "..", "../x", "a/b", "\x00"} {
			_, err := exec.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: id})
			check(t, "RemoveJobData "+id, err, codes.InvalidArgument)
		}
		_, err = exec.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: "no-such-job"})
		check(t, "RemoveJobData of an unknown job", err)
		_, err = exec.RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: done.JobId, JobSecret: "wrong"})
		check(t, "RemoveJobData with a wrong secret", err, codes.PermissionDenied)
		_, err = exec.PushDynamicFilters(ctx, &rpc.PushDynamicFiltersRequest{JobId: "no-such-job", Filters: []*rpc.DynamicFilterKeys{nil, {}}})
		check(t, "PushDynamicFilters", err)
	})

	t.Run("flight", func(t *testing.T) {
		client, err := c.env.Clients.Get(final.FlightAddress)
		if err != nil {
			t.Fatal(err)
		}
		tickets := [][]byte{nil, {0xff, 0x00, 0x13}, []byte(strings.Repeat("\x0a\x80", 1000))}
		for _, tk := range []*rpc.Ticket{
			{},
			{Kind: &rpc.Ticket_FetchPartition{FetchPartition: &rpc.FetchPartition{}}},
			{Kind: &rpc.Ticket_FetchPartition{FetchPartition: &rpc.FetchPartition{JobId: final.JobId, StageId: final.StageId,
				Path: "../../../../etc/passwd", JobSecret: done.JobSecret}}},
			{Kind: &rpc.Ticket_FetchPartition{FetchPartition: &rpc.FetchPartition{JobId: final.JobId, StageId: -7,
				Partition: -1, MapPartition: 1 << 30, Path: final.Path, JobSecret: done.JobSecret}}},
			{Kind: &rpc.Ticket_FetchPipelinedPartition{FetchPipelinedPartition: &rpc.FetchPipelinedPartition{JobId: "..", StageId: 1}}},
		} {
			b, err := proto.Marshal(tk)
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, b)
		}
		for i, tk := range tickets {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			stream, err := client.DoGet(rctx, &flight.Ticket{Ticket: tk})
			if err == nil {
				var r *flight.Reader
				if r, err = flight.NewRecordReader(stream); err == nil {
					for r.Next() {
					}
					err = r.Err()
					r.Release()
				}
			}
			cancel()
			check(t, "DoGet of ticket "+string(rune('0'+i)), err)
			if err == nil {
				t.Errorf("ticket %d served", i)
			}
		}
		// A client that goes away mid-stream leaves nothing behind.
		rctx, cancel := context.WithCancel(ctx)
		stream, err := client.DoGet(rctx, &flight.Ticket{Ticket: mustTicket(t, final, done.JobSecret)})
		if err == nil {
			_, _ = stream.Recv()
		}
		cancel()
	})

	// The cluster is still whole: the finished job's result can be read and
	// a new query runs.
	if rows, err := c.read(ctx, done); err != nil || len(rows) != 1 {
		t.Fatalf("reading the earlier result: %v %v", rows, err)
	}
	if rows, _, err := c.query(ctx, "SELECT count(*) FROM orders", nil); err != nil || len(rows) != 1 {
		t.Fatalf("a query after the malformed requests: %v %v", rows, err)
	}
}

func mustTicket(t *testing.T, loc *rpc.PartitionLocation, secret string) []byte {
	t.Helper()
	b, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPartition{FetchPartition: &rpc.FetchPartition{
		JobId: loc.JobId, StageId: loc.StageId, Partition: loc.Partition, MapPartition: loc.MapPartition, Path: loc.Path, JobSecret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func contains(codes []codes.Code, c codes.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}
