package session_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"sluice/cluster"
	"sluice/rpc"
	"sluice/session"
)

// TestIdleClientCancelsPipelinedJob: a client that stops reading a
// pipelined result (a paused shell) holds its job's vcores only for
// execution.idle_client_timeout: then the job fails, every executor gets
// its vcores back and other queries run, and the client, when it reads
// again, is told why its query ended.
func TestIdleClientCancelsPipelinedJob(t *testing.T) {
	ctx := context.Background()
	emb, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2})
	for k, v := range map[string]string{
		"execution.mode":                "pipelined",
		"execution.idle_client_timeout": "300ms",
		"exchange.queue_batches":        "1",
	} {
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	// busy is what the job holds: vcores the scheduler has reserved, and
	// tasks running on the executors.
	busy := func() (vcores, tasks int) {
		cs, err := emb.Scheduler().Scheduler().GetClusterState(ctx, &rpc.GetClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cs.Executors {
			vcores += int(e.Meta.Vcores - e.FreeVcores)
		}
		for _, x := range emb.Executors() {
			tasks += x.RunningTasks()
		}
		return vcores, tasks
	}
	// Far more rows than the queues and network buffers hold.
	res, err := s.Execute(ctx, "SELECT x, repeat('x', 200) AS pad FROM generate_series(1, 100000000) t(x)")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	b, err := res.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if vcores, tasks := busy(); vcores == 0 || tasks == 0 {
		t.Fatalf("the job holds %d vcores and runs %d tasks while it streams", vcores, tasks)
	}
	// The client pauses; the job must end and give everything back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		vcores, tasks := busy()
		if vcores == 0 && tasks == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the client paused, its job holds %d vcores and runs %d tasks", vcores, tasks)
		}
		time.Sleep(20 * time.Millisecond)
	}
	other, err := session.ConnectWith(emb.SchedulerAddr(), emb.Security())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := drain(ctx, other, "SELECT count(*) FROM generate_series(1, 1000)"); err != nil {
		t.Fatalf("another query after the job ended: %v", err)
	}
	// The client reads on: what was buffered, then why the query ended.
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		b, err := res.Next(rctx)
		if err == nil {
			b.Release()
			continue
		}
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "execution.idle_client_timeout") {
			t.Fatalf("the paused client read on to %v, want the idle timeout's error", err)
		}
		t.Log(err)
		break
	}
}

// TestSlowClientIsNotIdle: a client reading slowly, but reading, keeps its
// query however long it takes.
func TestSlowClientIsNotIdle(t *testing.T) {
	ctx := context.Background()
	_, s := startClusterWith(t, cluster.EmbeddedConfig{Executors: 2})
	for k, v := range map[string]string{
		"execution.mode":                "pipelined",
		"execution.idle_client_timeout": "500ms",
		"exchange.queue_batches":        "1",
		"execution.batch_size":          "1000",
	} {
		if err := s.Settings.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Execute(ctx, "SELECT x FROM generate_series(1, 20000) t(x)")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	rows := 0
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d rows: %v", rows, err)
		}
		rows += int(b.NumRows())
		b.Release()
		time.Sleep(50 * time.Millisecond)
	}
	if rows != 20000 {
		t.Errorf("%d rows, want 20000", rows)
	}
}
