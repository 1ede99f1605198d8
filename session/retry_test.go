package session_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sluice/cluster"
	"sluice/render"
	"sluice/rpc"
	"sluice/session"
)

// retryQuery's first row is its last (an ordered aggregate over lineitem),
// so a pipelined run delivers nothing before every task is done.
const retryQuery = `SELECT l_returnflag, l_linestatus, sum(l_quantity) AS qty, count(*) AS n,
	sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem JOIN orders ON l_orderkey = o_orderkey
WHERE o_orderdate < DATE '1995-01-01'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus`

// killer is a task hook that, once armed, kills one executor when the
// first task of the next job starts, and holds that job's tasks until the
// kill has begun, so that none of its rows can reach the client first.
// It counts the jobs whose tasks start.
type killer struct {
	emb    atomic.Pointer[cluster.Embedded]
	victim string
	armed  atomic.Bool

	mu      sync.Mutex
	jobs    []string
	target  string        // the job the kill is aimed at
	started chan struct{} // closed once the kill began
	killed  chan struct{} // closed once the victim is dead
}

func newKiller(victim string) *killer {
	return &killer{victim: victim, started: make(chan struct{}), killed: make(chan struct{})}
}

func (k *killer) hook(def *rpc.TaskDefinition) error {
	k.mu.Lock()
	id := def.Id.JobId
	seen := false
	for _, j := range k.jobs {
		seen = seen || j == id
	}
	if !seen {
		k.jobs = append(k.jobs, id)
	}
	fire := k.target == "" && k.armed.Load()
	if fire {
		k.target = id
		go func() {
			for _, x := range k.emb.Load().Executors() {
				if x.ID() == k.victim {
					close(k.started)
					x.Kill()
				}
			}
			close(k.killed)
		}()
	}
	target := k.target
	k.mu.Unlock()
	if id == target {
		select {
		case <-k.started:
		case <-time.After(5 * time.Second):
		}
	}
	return nil
}

// jobCount is how many jobs started tasks.
func (k *killer) jobCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.jobs)
}

// retryCluster is a 3-executor pipelined cluster with TPC-H SF 1 whose
// tasks go through k's hook.
func retryCluster(t *testing.T, k *killer) (*cluster.Embedded, *session.Session) {
	emb, s := pipelinedCluster(t, cluster.EmbeddedConfig{Executors: 3, VcoresPerExecutor: 2, ExecutorTimeout: 3 * time.Second, TaskFailureHook: k.hook})
	k.emb.Store(emb)
	return emb, s
}

// rowsOfResult reads a whole result as text lines.
func rowsOfResult(ctx context.Context, res *session.Result) ([]string, error) {
	var out []string
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			var vals []string
			for c := 0; c < int(b.NumCols()); c++ {
				v, _ := render.FormatValue(b.Column(c), i)
				vals = append(vals, v)
			}
			out = append(out, strings.Join(vals, "|"))
		}
		b.Release()
	}
}

func runQuery(t *testing.T, s *session.Session, q string) ([]string, *session.Stats, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := s.Execute(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	rows, err := rowsOfResult(ctx, res)
	res.Close()
	return rows, res.Stats(), err
}

// TestPipelinedRetryAfterKilledExecutor kills an executor while a
// pipelined query runs and before any of its rows reached the client: the
// query runs again on the two executors left and returns the exact
// answer, with a notice; with execution.query_retries = 0 it fails.
func TestPipelinedRetryAfterKilledExecutor(t *testing.T) {
	for _, retries := range []int{1, 0} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			k := newKiller("exec-1")
			_, s := retryCluster(t, k)
			want, _, err := runQuery(t, s, retryQuery)
			if err != nil || len(want) == 0 {
				t.Fatalf("before the kill: %d rows, %v", len(want), err)
			}
			if err := s.Settings.Set("execution.query_retries", fmt.Sprint(retries)); err != nil {
				t.Fatal(err)
			}
			var notices []string
			s.OnNotice = func(m string) { notices = append(notices, m) }
			before := k.jobCount()
			k.armed.Store(true)
			start := time.Now()
			got, st, err := runQuery(t, s, retryQuery)
			<-k.killed
			t.Logf("took %s; jobs started: %d", time.Since(start).Round(time.Millisecond), k.jobCount()-before)
			if retries == 0 {
				if err == nil {
					t.Fatalf("query succeeded with retries off after losing an executor: %v", got)
				}
				if k.jobCount()-before != 1 {
					t.Errorf("%d jobs ran, want 1", k.jobCount()-before)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("query with a retry: %v", err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if st.Attempts != 2 || k.jobCount()-before != 2 {
				t.Errorf("attempts %d, jobs started %d; want 2 and 2", st.Attempts, k.jobCount()-before)
			}
			if len(notices) != 1 || !strings.Contains(notices[0], "query retried after executor exec-1 was lost (attempt 2 of 2)") {
				t.Errorf("notices %q", notices)
			}
			if len(st.Notices) != 1 {
				t.Errorf("stats notices %q", st.Notices)
			}
		})
	}
}

// TestPipelinedQueryErrorIsNotRetried: a division by zero fails at once,
// whatever execution.query_retries says.
func TestPipelinedQueryErrorIsNotRetried(t *testing.T) {
	k := newKiller("")
	_, s := retryCluster(t, k)
	if err := s.Settings.Set("execution.query_retries", "5"); err != nil {
		t.Fatal(err)
	}
	_, _, err := runQuery(t, s, "SELECT sum(1 / (l_linenumber - l_linenumber)) FROM lineitem")
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("got %v, want a division by zero", err)
	}
	if n := k.jobCount(); n != 1 {
		t.Errorf("%d jobs ran, want 1", n)
	}
}

// TestPipelinedLossAfterDeliveryFails: once rows reached the client, an
// executor lost fails the query; the rows read until then are each read
// once.
func TestPipelinedLossAfterDeliveryFails(t *testing.T) {
	k := newKiller("")
	emb, s := retryCluster(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Execute(ctx, "SELECT l_orderkey, l_linenumber FROM lineitem")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	seen := map[string]bool{}
	var killedOnce sync.Once
	var readErr error
	for {
		b, err := res.Next(ctx)
		if err != nil {
			readErr = err
			break
		}
		for i := 0; i < int(b.NumRows()); i++ {
			a, _ := render.FormatValue(b.Column(0), i)
			c, _ := render.FormatValue(b.Column(1), i)
			key := a + "|" + c
			if seen[key] {
				t.Fatalf("row %s read twice", key)
			}
			seen[key] = true
		}
		b.Release()
		killedOnce.Do(func() {
			// Every executor runs part of the scan: kill one now that a
			// row was handed out.
			go emb.Executors()[0].Kill()
		})
	}
	if errors.Is(readErr, io.EOF) {
		t.Fatalf("the query completed (%d rows) although an executor was killed after its first rows", len(seen))
	}
	if k.jobCount() != 1 {
		t.Errorf("%d jobs ran, want 1 (no retry after a delivered row)", k.jobCount())
	}
	t.Logf("%d rows read, then: %v", len(seen), readErr)
}

// TestPipelinedRetryExplainAnalyze: EXPLAIN ANALYZE reads its job's rows
// as a query does, so a lost executor before the first row retries it
// too, and the metrics shown are the second attempt's.
func TestPipelinedRetryExplainAnalyze(t *testing.T) {
	k := newKiller("exec-1")
	_, s := retryCluster(t, k)
	k.armed.Store(true)
	var notices []string
	s.OnNotice = func(m string) { notices = append(notices, m) }
	rows, _, err := runQuery(t, s, "EXPLAIN ANALYZE "+retryQuery)
	<-k.killed
	if err != nil {
		t.Fatalf("EXPLAIN ANALYZE with a retry: %v", err)
	}
	text := strings.Join(rows, "\n")
	if !strings.Contains(text, "rows=") || len(notices) != 1 {
		t.Errorf("notices %q; plan:\n%s", notices, text)
	}
	if k.jobCount() != 2 {
		t.Errorf("%d jobs ran, want 2", k.jobCount())
	}
}
