package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/exchange"
	"sluice/physical"
	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/rpc"
)

// writeToken writes a token file and returns its path.
func writeToken(t *testing.T, dir, name, token string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecuredProcessCluster runs `sluice scheduler` and two `sluice
// executor` processes with --auth-token-file and shows the holes of an
// open cluster closed: callers without the token are refused by every
// server, a rogue executor cannot register, a second session cannot see,
// fetch, take, cancel or release the first session's jobs, and table
// files outside --allowed-locations cannot be read.
func TestSecuredProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 90*time.Second)
	tokDir := t.TempDir()
	token, admin := rpc.NewToken(), rpc.NewToken()
	tokFile := writeToken(t, tokDir, "token", token)
	adminFile := writeToken(t, tokDir, "admin", admin)
	sec := &rpc.Security{Token: token}
	pc := startProcessClusterWith(t, ctx, processClusterOptions{
		schedulerArgs: []string{"--auth-token-file", tokFile, "--admin-token-file", adminFile},
		executorArgs:  []string{"--auth-token-file", tokFile},
		client:        sec,
	})
	owner := pc.client
	cs, err := owner.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
	if err != nil || len(cs.Executors) != 2 {
		t.Fatalf("cluster state: %v, %v", cs, err)
	}
	x := cs.Executors[0].Meta

	// A blocking job of the first session, finished and not yet read.
	j, err := owner.submit(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.wait()
	if err != nil {
		t.Fatal(err)
	}
	loc := st.FinalLocations[0]
	fetch := &rpc.FetchPartition{JobId: loc.JobId, StageId: loc.StageId, Partition: loc.Partition, MapPartition: loc.MapPartition, Path: loc.Path}

	t.Run("no token", func(t *testing.T) {
		for _, bad := range []*rpc.Security{nil, {Token: rpc.NewToken()}} {
			c := newTestClient(t, pc.addr, bad)
			_, _, err := c.query(ctx, "SELECT 1", nil)
			wantUnauthenticated(t, "ExecuteQuery", err)
			_, err = c.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: st.JobId})
			wantUnauthenticated(t, "GetJobStatus", err)
			conn, err := grpc.NewClient(x.GrpcAddress, bad.DialOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rpc.NewExecutorServiceClient(conn).RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: st.JobId})
			wantUnauthenticated(t, "executor RemoveJobData", err)
			conn.Close()
			f := proto.Clone(fetch).(*rpc.FetchPartition)
			f.JobSecret = st.JobSecret // even with the job's secret
			wantUnauthenticated(t, "Flight DoGet", doGet(ctx, c.env.Clients, loc.FlightAddress, f))
		}
		// A rogue executor without the token cannot register.
		rogue := startProcess(t, pc.bin, "executor", "--scheduler", pc.addr, "--work-dir", filepath.Join(pc.dir, "rogue"), "--id", "rogue")
		select {
		case <-rogue.done:
		case <-ctx.Done():
			t.Fatal("the rogue executor is still running")
		}
		if rogue.err == nil || !strings.Contains(rogue.out.String(), "Unauthenticated") {
			t.Fatalf("rogue executor: exit %v, output:\n%s", rogue.err, rogue.out.String())
		}
	})

	t.Run("second session", func(t *testing.T) {
		other := newTestClient(t, pc.addr, sec)
		if _, err := other.sched.GetJobStatus(ctx, &rpc.GetJobStatusRequest{JobId: st.JobId}); status.Code(err) != codes.NotFound {
			t.Errorf("GetJobStatus: got %v, want NotFound", err)
		}
		if _, err := other.sched.CancelJob(ctx, &rpc.CancelJobRequest{JobId: st.JobId}); status.Code(err) != codes.NotFound {
			t.Errorf("CancelJob: got %v, want NotFound", err)
		}
		if _, err := other.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
			t.Errorf("ReleaseJob: %v", err)
		}
		if err := doGet(ctx, other.env.Clients, loc.FlightAddress, fetch); status.Code(err) != codes.PermissionDenied {
			t.Errorf("fetching the result without the job's secret: got %v, want PermissionDenied", err)
		}
		cs, err := other.sched.GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cs.Executors {
			conn, err := grpc.NewClient(e.Meta.GrpcAddress, sec.DialOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rpc.NewExecutorServiceClient(conn).RemoveJobData(ctx, &rpc.RemoveJobDataRequest{JobId: st.JobId})
			conn.Close()
			if e.Meta.Id == loc.ExecutorId && status.Code(err) != codes.PermissionDenied {
				t.Errorf("RemoveJobData on %s: got %v, want PermissionDenied", e.Meta.Id, err)
			}
		}
	})

	// The owner's job survived all of it.
	got, err := owner.read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want := localRows(t, pc.cat, heavyQuery)
	sameRows(t, "owner's blocking result", got, want, true)
	if _, err := owner.sched.ReleaseJob(ctx, &rpc.ReleaseJobRequest{JobId: st.JobId}); err != nil {
		t.Fatal(err)
	}

	t.Run("pipelined take", func(t *testing.T) {
		j, err := owner.submit(ctx, heavyQuery, map[string]string{"execution.mode": "pipelined", "optimizer.broadcast_join_threshold_bytes": "0"})
		if err != nil {
			t.Fatal(err)
		}
		st := j.placed(t)
		other := newTestClient(t, pc.addr, sec)
		p := st.FinalProducers[0].Producers[0]
		var own []byte // the capability of partition 0 of task p
		for _, c := range st.FinalCapabilities {
			if c.StageId == st.FinalStageId && c.TaskId == p.TaskId && c.Partition == 0 {
				own = c.Capability
			}
		}
		if len(own) == 0 {
			t.Fatalf("the owner holds no capability of the final partition: %v", st.FinalCapabilities)
		}
		take := func(secret string, capability []byte) error {
			ticket, err := proto.Marshal(&rpc.Ticket{Kind: &rpc.Ticket_FetchPipelinedPartition{FetchPipelinedPartition: &rpc.FetchPipelinedPartition{
				JobId: st.JobId, StageId: st.FinalStageId, TaskId: p.TaskId, Partition: 0, JobSecret: secret, Capability: capability}}})
			if err != nil {
				t.Fatal(err)
			}
			client, err := other.env.Clients.Get(p.FlightAddress)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := client.DoGet(ctx, &flight.Ticket{Ticket: ticket})
			if err == nil {
				_, err = stream.Recv()
			}
			return err
		}
		for _, secret := range []string{"", rpc.NewToken()} {
			if err := take(secret, own); status.Code(err) != codes.PermissionDenied {
				t.Errorf("taking the owner's pipelined partition with secret %q: got %v, want PermissionDenied", secret, err)
			}
		}
		// The job's secret, which every task of the job holds, does not
		// take a pipelined partition either: only its wired consumer, here
		// the owner, holds the partition's capability. Were it taken, the
		// owner's read below would fail with "already being read".
		forged := rpc.PipelinedCapability([]byte(st.JobSecret), 0)
		for name, c := range map[string][]byte{"no capability": nil, "the job's secret": []byte(st.JobSecret), "a forged one": forged} {
			if err := take(st.JobSecret, c); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "wired consumer") {
				t.Errorf("taking the owner's pipelined partition with the job's secret and %s: got %v, want PermissionDenied", name, err)
			}
		}
		got := readPipelined(t, ctx, owner, st)
		sameRows(t, "owner's pipelined result", got, want, true)
	})

	t.Run("locations", func(t *testing.T) {
		if err := os.Symlink("/etc/passwd", filepath.Join(pc.data, "passwd.csv")); err != nil {
			t.Fatal(err)
		}
		for _, loc := range []string{"/etc/passwd", "/proc/self/cmdline", filepath.Join(pc.data, "passwd.csv"), filepath.Join(pc.data, "..", "token")} {
			_, _, err := owner.query(ctx, "CREATE EXTERNAL TABLE pw (line VARCHAR) STORED AS CSV DELIMITER '|' LOCATION '"+loc+"'", nil)
			if err == nil || !strings.Contains(err.Error(), "location not allowed") {
				t.Errorf("%s: got %v, want location not allowed", loc, err)
			}
		}
		// Files queried by path pass the same check.
		for _, q := range []string{
			"SELECT * FROM read_csv('/etc/passwd', delim => '|')",
			"SELECT * FROM '/etc/*.csv'",
			"SELECT * FROM '" + filepath.Join(pc.data, "passwd.csv") + "'",
			"SELECT * FROM '" + filepath.Join(pc.data, "..", "*.csv") + "'",
			"SELECT * FROM read_parquet('/proc/self/*')",
		} {
			_, _, err := owner.query(ctx, q, nil)
			if err == nil || !strings.Contains(err.Error(), "location not allowed") {
				t.Errorf("%s: got %v, want location not allowed", q, err)
			}
		}
	})

	t.Run("terminal escapes", func(t *testing.T) {
		// ESC and BEL in a CSV file reach the shell's table escaped.
		if err := os.WriteFile(filepath.Join(pc.data, "ctl.csv"), []byte("v\n\x1b[2J\x1b]0;owned\acleared\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := owner.query(ctx, "CREATE EXTERNAL TABLE ctl STORED AS CSV WITH HEADER ROW LOCATION '"+filepath.Join(pc.data, "ctl.csv")+"'", nil); err != nil {
			t.Fatal(err)
		}
		shell := exec.CommandContext(ctx, pc.bin, "--scheduler", pc.addr, "--format", "table", "--no-rc", "-c", "SELECT v FROM ctl")
		shell.Env = append(os.Environ(), "SLUICE_AUTH_TOKEN="+token)
		out, err := shell.CombinedOutput()
		if err != nil {
			t.Fatalf("shell: %v\n%s", err, out)
		}
		if strings.ContainsAny(string(out), "\x1b\a") || !strings.Contains(string(out), `\x1b[2J\x1b]0;owned\x07cleared`) {
			t.Errorf("shell output:\n%q", out)
		}
		// Without the token the shell is refused.
		shell = exec.CommandContext(ctx, pc.bin, "--scheduler", pc.addr, "--no-rc", "-c", "SELECT 1")
		shell.Env = append(os.Environ(), "SLUICE_AUTH_TOKEN=")
		out, err = shell.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Unauthenticated") {
			t.Errorf("shell without the token: %v\n%s", err, out)
		}
	})

	t.Run("default scheduler reads nothing", func(t *testing.T) {
		sched := startProcess(t, pc.bin, "scheduler", "--bind", "127.0.0.1:0")
		addr := sched.await(t, regexp.MustCompile(`msg="scheduler listening" addr=(\S+)`))
		c := newTestClient(t, addr, nil)
		for _, loc := range []string{"/etc/passwd", "/proc/self/cmdline", filepath.Join(pc.data, "orders")} {
			_, _, err := c.query(ctx, "CREATE EXTERNAL TABLE pw (line VARCHAR) STORED AS CSV DELIMITER '|' LOCATION '"+loc+"'", nil)
			if err == nil || !strings.Contains(err.Error(), "--allowed-locations") {
				t.Errorf("%s: got %v, want a refusal naming --allowed-locations", loc, err)
			}
		}
		sched.stop(t)
	})
}

// readPipelined reads a running pipelined job's results as the shell
// does, with the job's secret and the final queues' capabilities in the
// tickets.
func readPipelined(t *testing.T, ctx context.Context, c *testClient, st *rpc.JobStatus) []string {
	t.Helper()
	schema, err := expr.SchemaFromProto(st.Schema)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([][]*rpc.PipelinedProducer, len(st.FinalProducers))
	for i, p := range st.FinalProducers {
		parts[i] = p.Producers
	}
	var op physical.Operator = exchange.NewPipelinedReader(st.JobId, int(st.FinalStageId), schema, parts)
	if len(parts) != 1 {
		op = physical.NewCoalescePartitions(op)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &physical.TaskContext{Alloc: mem, Memory: mempool.NewPool("client", 0, nil), BatchSize: physical.DefaultBatchSize,
		Exchange: &exchange.TaskEnv{Env: c.env, JobID: st.JobId, JobSecret: st.JobSecret, Capabilities: exchange.CapabilitiesOf(st.FinalCapabilities)}}
	s, err := op.Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := drain(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestTLSProcessCluster runs the scheduler and executors as processes with
// --tls-cert, --tls-key and --tls-ca (mutual TLS) and a token: the shell
// with the cluster's CA and a certificate runs a query; a client trusting
// another CA, or presenting no certificate, is refused.
func TestTLSProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	ctx := testContext(t, 90*time.Second)
	dir := t.TempDir()
	good := newTestPKI(t, dir, "good")
	bad := newTestPKI(t, dir, "bad")
	token := rpc.NewToken()
	tokFile := writeToken(t, dir, "token", token)
	tlsArgs := []string{"--auth-token-file", tokFile, "--tls-cert", good.cert, "--tls-key", good.key, "--tls-ca", good.ca}
	pc := startProcessClusterWith(t, ctx, processClusterOptions{
		schedulerArgs: tlsArgs, executorArgs: tlsArgs, client: good.security(t, token, true),
	})
	got, _, err := pc.client.query(ctx, heavyQuery, heavySettings)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "over mutual TLS", got, localRows(t, pc.cat, heavyQuery), true)

	shell := exec.CommandContext(ctx, pc.bin, append([]string{"--scheduler", pc.addr, "--no-rc", "--format", "csv",
		"-c", "SET execution.mode = 'pipelined'", "-c", "SELECT count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey"}, tlsArgs...)...)
	out, err := shell.CombinedOutput()
	if err != nil {
		t.Fatalf("shell over TLS: %v\n%s", err, out)
	}
	want := localRows(t, pc.cat, "SELECT count(*) FROM orders JOIN lineitem ON o_orderkey = l_orderkey")
	if !strings.Contains(string(out), want[0]) {
		t.Errorf("shell over TLS printed %q, want the count %s", out, want[0])
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"another CA", []string{"--auth-token-file", tokFile, "--tls-cert", bad.cert, "--tls-key", bad.key, "--tls-ca", bad.ca}},
		{"trusting another CA", []string{"--auth-token-file", tokFile, "--tls-cert", good.cert, "--tls-key", good.key, "--tls-ca", bad.ca}},
		{"no client certificate", []string{"--auth-token-file", tokFile, "--tls-ca", good.ca}},
		{"plaintext", []string{"--auth-token-file", tokFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shell := exec.CommandContext(ctx, pc.bin, append([]string{"--scheduler", pc.addr, "--no-rc", "-c", "SELECT 1"}, tc.args...)...)
			out, err := shell.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "Unavailable") {
				t.Errorf("got %v, want the connection refused:\n%s", err, out)
			}
		})
	}
}
