package exchange

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/rpc"
)

// TestFlightServiceWantsTheJobSecret: with Env.Secrets set, a shuffle file
// is served only to a ticket carrying its job's secret. Files whose job has
// no secret on this executor (an earlier scheduler instance's, left in the
// work dir) are served to nobody, and errors do not name the work dir.
func TestFlightServiceWantsTheJobSecret(t *testing.T) {
	checkGoroutines(t)
	env, _ := newExecutorEnv(t, "e1")
	loc := writeStage(t, env, "job", 1, 300, 1)[0][0]
	orphan := writeStage(t, env, "orphan", 1, 10, 1)[0][0]
	env.Secrets = NewJobSecrets()
	if err := env.Secrets.Bind("job", "right"); err != nil {
		t.Fatal(err)
	}
	pool := NewClientPool(nil)
	defer pool.Close()
	fetch := func(job, secret, path string) (int, error) {
		return rawDoGet(t, pool, env.FlightAddress, fetchTicket(t, &rpc.FetchPartition{JobId: job, StageId: 1, Path: path, JobSecret: secret, Batches: loc.Batches}))
	}
	if rows, err := fetch("job", "right", loc.Path); err != nil || rows != int(loc.NumRows) {
		t.Fatalf("with the secret: %d rows, %v", rows, err)
	}
	for _, secret := range []string{"", "wrong", "righ", "right "} {
		_, err := fetch("job", secret, loc.Path)
		if st, _ := status.FromError(unwrapStatus(err)); st.Code() != codes.PermissionDenied {
			t.Errorf("secret %q: got %v, want PermissionDenied", secret, err)
		}
	}
	for _, secret := range []string{"", "right"} {
		_, err := fetch("orphan", secret, orphan.Path)
		if st, _ := status.FromError(unwrapStatus(err)); st.Code() != codes.NotFound {
			t.Errorf("orphaned data with secret %q: got %v, want NotFound", secret, err)
		}
	}

	// A corrupt file fails the fetch without naming the work dir.
	if err := os.WriteFile(loc.Path, []byte("not arrow"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := fetch("job", "right", loc.Path)
	if err == nil || strings.Contains(err.Error(), env.WorkDir) || !strings.Contains(err.Error(), workDirMark) {
		t.Errorf("reading a corrupt file: %v (want the work dir replaced by %s)", err, workDirMark)
	}
}

func TestJobSecretsBind(t *testing.T) {
	s := NewJobSecrets()
	if err := s.Bind("j", ""); err == nil {
		t.Error("a task without a secret was accepted")
	}
	if err := s.Bind("j", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Bind("j", "a"); err != nil {
		t.Errorf("a second task with the same secret: %v", err)
	}
	if err := s.Bind("j", "b"); err == nil {
		t.Error("a task with another secret for a known job was accepted")
	}
	ctx := context.Background()
	if known, ok := s.Check(ctx, "j", "a", 0); !known || !ok {
		t.Errorf("Check right secret: known %v ok %v", known, ok)
	}
	// A pipelined consumer may ask before the producer's task arrives.
	checked := make(chan bool)
	go func() {
		known, ok := s.Check(ctx, "later", "c", 5*time.Second)
		checked <- known && ok
	}()
	if err := s.Bind("later", "c"); err != nil {
		t.Fatal(err)
	}
	if !<-checked {
		t.Error("waiting for a job's first task: not known")
	}
	s.Forget("j")
	start := time.Now()
	if known, _ := s.Check(ctx, "j", "a", 5*time.Second); known {
		t.Error("a removed job is still known")
	}
	if time.Since(start) > time.Second {
		t.Error("Check waited for a removed job")
	}
	if err := s.Bind("j", "a"); err == nil {
		t.Error("a task of a removed job was accepted")
	}
}
