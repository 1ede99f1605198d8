package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"sluice/catalog"
	"sluice/rpc"
)

// TestSeparateProcesses runs `sluice scheduler` and two `sluice executor`
// processes, queries them, then kills one executor with SIGKILL during a
// multi-stage query.
func TestSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 60*time.Second)
	sched, execs, c, cat := startProcessCluster(t, ctx)
	q := testQueries[0]
	got, _, err := c.query(ctx, q.sql, q.settings)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, q.name, got, localRows(t, cat, q.sql), q.ordered)

	// Kill proc-2 once the first stage is done, if the query is still
	// running by then; either way the answer must be right.
	j, err := c.submit(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	midQuery := false
	for {
		st, err := c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: j.id()})
		if err != nil {
			t.Fatal(err)
		}
		if finalState(st.State) {
			break
		}
		if st.Progress.GetStagesDone() >= 1 {
			midQuery = true
			break
		}
	}
	execs[1].kill(t)
	st, err := j.wait()
	if err != nil {
		t.Fatalf("query with a killed executor: %v\n%s", err, st.GetStages())
	}
	got, err = c.read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want := localRows(t, cat, heavyQuery)
	sameRows(t, "heavy", got, want, true)
	t.Logf("killed mid-query: %v\n%s", midQuery, st.Stages)

	// The survivor runs queries alone.
	got, _, err = c.query(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "heavy after the kill", got, want, true)

	execs[0].stop(t)
	sched.stop(t)
}

// startProcessCluster builds the sluice binary, starts a scheduler and
// two executors (heartbeats every 400 ms, lost after 2 s) as processes, and
// registers the test tables through a client of that scheduler; cat holds
// the same tables for the local engine that checks answers.
func startProcessCluster(t *testing.T, ctx context.Context) (sched *process, execs []*process, c *testClient, cat *catalog.Catalog) {
	t.Helper()
	pc := startProcessClusterWith(t, ctx, processClusterOptions{})
	return pc.sched, pc.execs, pc.client, pc.cat
}

// processClusterOptions are the extra flags of a process cluster's
// members and what its test client presents.
type processClusterOptions struct {
	schedulerArgs, executorArgs []string
	client                      *rpc.Security
}

// processCluster is a started process cluster.
type processCluster struct {
	bin, dir, addr, data string
	sched                *process
	execs                []*process
	client               *testClient
	cat                  *catalog.Catalog
}

// buildSluice builds the sluice binary into dir.
func buildSluice(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProcessClusterWith is startProcessCluster with extra flags. The
// scheduler and the executors may read the test tables' directory
// (--allowed-locations).
func startProcessClusterWith(t *testing.T, ctx context.Context, o processClusterOptions) *processCluster {
	t.Helper()
	pc := &processCluster{dir: t.TempDir()}
	dir := pc.dir
	bin := buildSluice(t, dir)
	pc.bin = bin
	data := filepath.Join(dir, "data")
	cat := writeTestTables(t, data)
	sched := startProcess(t, bin, append([]string{"scheduler", "--bind", "127.0.0.1:0", "--policy", "push", "--executor-timeout", "2s",
		"--allowed-locations", data}, o.schedulerArgs...)...)
	addr := sched.await(t, regexp.MustCompile(`msg="scheduler listening" addr=(\S+)`))
	var execs []*process
	for i := 1; i <= 2; i++ {
		execs = append(execs, startProcess(t, bin, append([]string{"executor", "--scheduler", addr, "--bind", "127.0.0.1:0",
			"--flight-bind", "127.0.0.1:0", "--vcores", "2", "--work-dir", filepath.Join(dir, fmt.Sprintf("work-%d", i)),
			"--id", fmt.Sprintf("proc-%d", i), "--heartbeat", "400ms", "--allowed-locations", data}, o.executorArgs...)...))
	}
	for _, x := range execs {
		x.await(t, regexp.MustCompile(`msg="executor registered"`))
	}
	c := newTestClient(t, addr, o.client)
	for _, tb := range testTables {
		sql := fmt.Sprintf("CREATE EXTERNAL TABLE %s STORED AS PARQUET LOCATION '%s'", tb.name, filepath.Join(data, tb.name))
		if _, _, err := c.query(ctx, sql, nil); err != nil {
			t.Fatal(err)
		}
	}
	pc.addr, pc.data, pc.sched, pc.execs, pc.client, pc.cat = addr, data, sched, execs, c, cat
	return pc
}

// TestFrozenExecutorBlocking freezes an executor (SIGSTOP) once the first
// stage of a blocking query is done: consumers fetching its output must not
// wait for good. Keepalive ends their fetches, the scheduler drops the
// executor and re-runs its work, and the query completes with the right
// answer.
func TestFrozenExecutorBlocking(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	sched, execs, c, cat := startProcessCluster(t, ctx)
	settings := map[string]string{"execution.mode": "blocking"}
	for k, v := range heavySettings {
		settings[k] = v
	}
	j, err := c.submit(ctx, heavyQuery, settings)
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: j.id()})
		if err != nil {
			t.Fatal(err)
		}
		if finalState(st.State) || st.Progress.GetStagesDone() >= 1 {
			break
		}
	}
	frozen := execs[1]
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = frozen.cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	st, err := j.wait()
	if err != nil {
		t.Fatalf("query with a frozen executor: %v\n%s", err, st.GetStages())
	}
	got, err := c.read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "heavy", got, localRows(t, cat, heavyQuery), true)
	t.Logf("completed %v after the freeze\n%s", time.Since(start), st.Stages)
	_ = frozen.cmd.Process.Signal(syscall.SIGCONT)
	execs[0].stop(t)
	sched.stop(t)
}

// process is a sluice subprocess whose stderr is kept for the test log.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *watchedBuffer
	done chan struct{}
	err  error
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: args[0], cmd: exec.Command(bin, args...), out: &watchedBuffer{changed: make(chan struct{})}, done: make(chan struct{})}
	p.cmd.Stderr = p.out
	p.cmd.Stdout = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// await waits for a line of output matching re and returns its first
// group, if any.
func (p *process) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		text, changed := p.out.snapshot()
		if m := re.FindStringSubmatch(text); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		select {
		case <-changed:
		case <-p.done:
			t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, p.out.String())
		case <-timeout.C:
			t.Fatalf("%s did not print %s within 30s:\n%s", p.name, re, p.out.String())
		}
	}
}

// kill sends SIGKILL and waits for the process to die.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// stop sends SIGTERM and expects a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop within 20s of SIGTERM", p.name)
	}
	if p.err != nil {
		t.Errorf("%s exited with %v after SIGTERM", p.name, p.err)
	}
}

// watchedBuffer collects output and signals every write.
type watchedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (w *watchedBuffer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.buf.Write(b)
}

func (w *watchedBuffer) snapshot() (string, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), w.changed
}

func (w *watchedBuffer) String() string {
	s, _ := w.snapshot()
	return s
}

// TestPausedClientProcess: a shell streaming a pipelined result into a
// pipe nobody reads (a paused terminal, a stuck consumer) holds its job's
// vcores only for execution.idle_client_timeout; then the job fails, the
// cluster's vcores are all free again and other queries run.
func TestPausedClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 120*time.Second)
	sched, _, c, _ := startProcessCluster(t, ctx)
	addr := sched.await(t, regexp.MustCompile(`msg="scheduler listening" addr=(\S+)`))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read: the shell blocks once the pipe is full
	client := exec.Command(sched.cmd.Path, "--scheduler", addr, "--format", "csv",
		"-c", "SET execution.idle_client_timeout = '1s'",
		"-c", "SELECT x, repeat('x', 100) AS pad FROM generate_series(1, 100000000) t(x)")
	client.Stdout = w
	var stderr bytes.Buffer
	client.Stderr = &stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer func() {
		_ = client.Process.Kill()
		_ = client.Wait()
	}()
	busy := func() (held, jobs int) {
		cs, err := c.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cs.Executors {
			held += int(e.Meta.Vcores - e.FreeVcores)
		}
		return held, len(cs.RunningJobs)
	}
	// The job starts, then must end with the client still paused.
	started := false
	for deadline := time.Now().Add(90 * time.Second); ; {
		held, jobs := busy()
		if held > 0 || jobs > 0 {
			started = true
		} else if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paused client's job still holds %d vcores (started: %v); client stderr:\n%s", held, started, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	q := testQueries[0]
	if _, _, err := c.query(ctx, q.sql, map[string]string{"execution.mode": "pipelined"}); err != nil {
		t.Fatalf("a query after the paused client's job ended: %v", err)
	}
}
