package cluster

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/exchange"
	"sluice/rpc"
)

// hookSlot lets a TaskFailureHook, fixed before the cluster starts, reach
// the cluster once it exists.
type hookSlot struct{ emb atomic.Pointer[Embedded] }

func (h *hookSlot) executor(id string) *Executor {
	for _, x := range h.emb.Load().Executors() {
		if x.ID() == id {
			return x
		}
	}
	return nil
}

// faultConfig is a cluster that notices lost executors within seconds.
func faultConfig(policy string, hook func(*rpc.TaskDefinition) error) EmbeddedConfig {
	return EmbeddedConfig{Executors: 2, Policy: policy, ExecutorTimeout: 2 * time.Second, TaskFailureHook: hook}
}

func TestKilledExecutorWorkIsRerun(t *testing.T) {
	for _, policy := range []string{PolicyPush, PolicyPull} {
		t.Run(policy, func(t *testing.T) {
			var (
				slot hookSlot
				once sync.Once
				dead = make(chan struct{}) // closed once the victim is killed
			)
			// When the second stage starts, kill an executor holding
			// output of the first: exec-2 when the output is spread over
			// both, the one holding it all otherwise (under load in pull
			// mode, exec-1 sometimes pulled every task of the first stage,
			// and killing exec-2 lost nothing). The kill runs on its own
			// goroutine (Kill waits for the victim's tasks, this one
			// included if it runs there), and the second stage's tasks
			// wait for it, so that none can finish reading the victim's
			// output first. A task on the victim stops waiting after a
			// while, so that Kill, waiting for it, can end.
			hook := func(def *rpc.TaskDefinition) error {
				if def.Id.StageId >= 2 {
					once.Do(func() {
						victim := slot.executor("exec-2")
						if !holdsOutputs(victim) {
							victim = slot.executor("exec-1")
						}
						go func() {
							victim.Kill()
							close(dead)
						}()
					})
					select {
					case <-dead:
					case <-time.After(2 * time.Second):
					}
				}
				return nil
			}
			emb, cat := startCluster(t, faultConfig(policy, hook))
			slot.emb.Store(emb)
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			got, st, err := c.query(testContext(t, 60*time.Second), heavyQuery, heavySettings)
			<-dead
			if err != nil {
				t.Fatalf("query after losing an executor: %v\n%s", err, st.GetStages())
			}
			sameRows(t, "heavy", got, localRows(t, cat, heavyQuery), true)
			t.Logf("stages:\n%s", st.Stages)
			if !strings.Contains(st.Stages, "lost") && !strings.Contains(st.Stages, "failed") {
				t.Errorf("no task was lost or failed; the kill came too late to test anything:\n%s", st.Stages)
			}
		})
	}
}

// holdsOutputs reports whether x holds stage output: held in memory, or
// in a shuffle file.
func holdsOutputs(x *Executor) bool {
	return x.env.Held.Outputs() > 0 || holdsShuffleFiles(x.WorkDir())
}

// holdsShuffleFiles reports whether dir holds a shuffle file.
func holdsShuffleFiles(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".arrow") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

func TestAllExecutorsKilledFailsQuery(t *testing.T) {
	var (
		slot   hookSlot
		once   sync.Once
		killed sync.WaitGroup
	)
	hook := func(def *rpc.TaskDefinition) error {
		if def.Id.StageId >= 2 {
			once.Do(func() {
				killed.Add(1)
				go func() {
					defer killed.Done()
					for _, x := range slot.emb.Load().Executors() {
						x.Kill()
					}
				}()
			})
		}
		return nil
	}
	emb, _ := startCluster(t, faultConfig(PolicyPush, hook))
	slot.emb.Store(emb)
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	start := time.Now()
	_, st, err := c.query(testContext(t, 40*time.Second), heavyQuery, heavySettings)
	killed.Wait()
	if err == nil {
		t.Fatal("query succeeded with every executor killed")
	}
	if st.GetState() != rpc.JobState_JOB_FAILED {
		t.Fatalf("got %v (state %v), want a failed job", err, st.GetState())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the failure took %s, want under 30s", took)
	}
	if msg := st.GetError().GetMessage(); !strings.Contains(msg, "executor") {
		t.Errorf("error %q does not say that executors were lost", msg)
	}
}

func TestInjectedTaskFailuresAreRetried(t *testing.T) {
	var failed, panicked atomic.Int32
	hook := func(def *rpc.TaskDefinition) error {
		if def.Id.StageId != 1 || def.Id.Attempt != 0 {
			return nil
		}
		switch def.Id.TaskId {
		case 0:
			failed.Add(1)
			return errors.New("disk on fire")
		case 1:
			panicked.Add(1)
			panic("operator bug")
		}
		return nil
	}
	emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	got, st, err := c.query(testContext(t, 60*time.Second), heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "heavy", got, localRows(t, cat, heavyQuery), true)
	if failed.Load() != 1 || panicked.Load() != 1 {
		t.Errorf("hook failed %d and panicked %d first attempts, want 1 each", failed.Load(), panicked.Load())
	}
	if strings.Count(st.Stages, "failed") < 2 {
		t.Errorf("want two failed attempts in the stages:\n%s", st.Stages)
	}
}

func TestTaskPanicFailsJobWithStack(t *testing.T) {
	var logged syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	hook := func(def *rpc.TaskDefinition) error {
		if def.Id.StageId == 1 {
			panic("operator bug")
		}
		return nil
	}
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2, TaskFailureHook: hook})
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	_, st, err := c.query(testContext(t, 60*time.Second), heavyQuery, heavySettings)
	if err == nil {
		t.Fatal("query succeeded although every task of stage 1 panics")
	}
	// The user sees the panic as an internal error; the stack goes to the
	// log, not into the message.
	msg := st.GetError().GetMessage()
	if !strings.Contains(msg, "internal error: operator bug") || strings.Contains(msg, "goroutine ") {
		t.Errorf("error is not an internal error without a stack:\n%s", msg)
	}
	if l := logged.String(); !strings.Contains(l, "operator bug") || !strings.Contains(l, "goroutine ") {
		t.Errorf("the log lacks the panic's stack:\n%.2000s", l)
	}
	// The executors survived the panics.
	if _, _, err := c.query(testContext(t, 60*time.Second), "SELECT count(*) FROM orders", nil); err == nil {
		t.Error("the hook panics in every stage 1 task; this query should have failed too")
	} else if !strings.Contains(err.Error(), "internal error: operator bug") {
		t.Errorf("second query: %v", err)
	}
}

func TestCancelMidQueryStopsTasksAndRemovesFiles(t *testing.T) {
	for _, policy := range []string{PolicyPush, PolicyPull} {
		t.Run(policy, func(t *testing.T) {
			// Stage 2 tasks hang until the test has seen them cancelled.
			hook, entered, unblock := hungStage2()
			emb, _ := startCluster(t, EmbeddedConfig{Executors: 2, Policy: policy, TaskFailureHook: hook})
			t.Cleanup(unblock) // before the cluster's Close, which waits for the hung tasks
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			ctx := testContext(t, 60*time.Second)
			j, err := c.submit(ctx, heavyQuery, heavySettings)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-entered:
			case <-ctx.Done():
				t.Fatal("stage 2 never started")
			}
			if n := countOutputs(t, emb); n == 0 {
				t.Fatal("stage 1 wrote no output; the test would prove nothing")
			}
			cancelled := make(chan error, 1)
			go func() {
				_, err := c.sched.CancelJob(ctx, &rpc.CancelJobRequest{JobId: j.id()})
				cancelled <- err
			}()
			waitFor(t, "stage 2 tasks cancelled", func() bool { return allCancelled(emb) })
			unblock()
			if err := <-cancelled; err != nil {
				t.Fatal(err)
			}
			st, err := j.wait()
			if st.GetState() != rpc.JobState_JOB_CANCELLED {
				t.Fatalf("job ended %v (%v), want cancelled", st.GetState(), err)
			}
			waitFor(t, "no running tasks", func() bool {
				for _, x := range emb.Executors() {
					if x.RunningTasks() > 0 {
						return false
					}
				}
				return true
			})
			// A removed job's directory is renamed away and its files are
			// deleted in the background: wait for that to finish.
			waitFor(t, "no output left, held or in the work dirs, after cancelling", func() bool { return countOutputs(t, emb) == 0 })
		})
	}
}

// allCancelled reports whether every task on the executors has had its
// context cancelled.
func allCancelled(emb *Embedded) bool {
	for _, x := range emb.Executors() {
		x.mu.Lock()
		for _, rt := range x.running {
			if rt.ctx.Err() == nil {
				x.mu.Unlock()
				return false
			}
		}
		x.mu.Unlock()
	}
	return true
}

// countOutputs counts the outputs the executors hold in memory and the
// files in their work dirs.
func countOutputs(t *testing.T, emb *Embedded) int {
	t.Helper()
	n := 0
	for _, x := range emb.Executors() {
		n += x.env.Held.Outputs()
		err := filepath.WalkDir(x.WorkDir(), func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile (a removed job's files go in the background)
			}
			if err == nil && !d.IsDir() {
				n++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling state that has no notification
	}
}

func TestTicketsForUnknownJobsAreRejected(t *testing.T) {
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2})
	c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
	ctx := testContext(t, 30*time.Second)
	j, err := c.submit(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FinalLocations) == 0 {
		t.Fatal("no final locations")
	}
	final := st.FinalLocations[0]
	if _, err := c.read(ctx, st); err != nil {
		t.Fatalf("reading the result before release: %v", err)
	}
	if _, err := c.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		fetch *rpc.FetchPartition
	}{
		{"never existed", &rpc.FetchPartition{JobId: "no-such-job", StageId: 1}},
		{"released", &rpc.FetchPartition{JobId: final.JobId, StageId: final.StageId, Partition: final.Partition, MapPartition: final.MapPartition, Path: final.Path}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := doGet(ctx, c.env.Clients, final.FlightAddress, tt.fetch)
			if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "unknown job") {
				t.Fatalf("got %v, want NotFound: unknown job", err)
			}
		})
	}
}

// doGet sends a FetchPartition ticket and reads the stream to its end.
func doGet(ctx context.Context, pool *exchange.ClientPool, addr string, f *rpc.FetchPartition) error {
	ticket, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPartition{FetchPartition: f}})
	if err != nil {
		return err
	}
	client, err := pool.Get(addr)
	if err != nil {
		return err
	}
	stream, err := client.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return err
	}
	r, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
	}
	return r.Err()
}

// TestStoppedExecutorLeavesAtOnce: an executor closed gracefully (SIGTERM)
// tells the scheduler, which removes it and logs why, instead of offering
// its vcores until its heartbeats are missed.
func TestStoppedExecutorLeavesAtOnce(t *testing.T) {
	var logBuf syncBuffer
	emb, _ := startCluster(t, EmbeddedConfig{Executors: 2, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	sched := emb.Scheduler().Scheduler()
	count := func() int {
		cs, err := sched.GetClusterState(context.Background(), &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return len(cs.Executors)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d executors at start, want 2", n)
	}
	gone := emb.Executors()[0]
	gone.Close()
	if n := count(); n != 1 {
		t.Errorf("%d executors right after one stopped, want 1", n)
	}
	if !strings.Contains(logBuf.String(), "executor removed") || !strings.Contains(logBuf.String(), "why=stopped") {
		t.Errorf("the scheduler's log does not say the executor was removed:\n%s", logBuf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
