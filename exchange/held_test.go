package exchange

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"sluice/physical/mempool"
	"sluice/rpc"
)

// heldEnv is an executor Env (work dir, Flight service) holding up to
// limit bytes of outputs, reserved from pool (nil: none); the held
// outputs of job "job" are dropped before the allocators are checked.
func heldEnv(t *testing.T, limit int64, pool *mempool.Pool) *Env {
	t.Helper()
	env, _ := newExecutorEnv(t, "e1")
	env.Held = NewHeldOutputs(limit, pool)
	return env
}

// readStage reads every partition of parts through a ShuffleReader on
// reader and returns the rows, sorted.
func readStage(t *testing.T, reader *Env, parts [][]*rpc.PartitionLocation) []string {
	t.Helper()
	r := NewShuffleReader(1, testSchema, parts)
	var all []string
	for p := range parts {
		tc, _ := checkedTC(t, reader)
		s, err := r.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readAll(t, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if k := keyOf(t, row); keyPartition(t, k, len(parts)) != p {
				t.Fatalf("key %d read in partition %d", k, p)
			}
		}
		all = append(all, rows...)
	}
	slices.Sort(all)
	return all
}

// keyOf is the key of a row as batchRows formats it.
func keyOf(t *testing.T, row string) int64 {
	t.Helper()
	var k int64
	for _, c := range row {
		if c < '0' || c > '9' {
			break
		}
		k = k*10 + int64(c-'0')
	}
	return k
}

// TestHeldOutputsRoundTrip: within its budget a task's output is held,
// no file is written, and readers on the executor and over Flight read
// every row, each partition its own; dropping the job releases it all.
func TestHeldOutputsRoundTrip(t *testing.T) {
	checkGoroutines(t)
	pool := mempool.NewPool("executor", 1<<30, nil)
	producer := heldEnv(t, 1<<30, pool)
	parts := writeStage(t, producer, "job", 1, 900, 4)
	t.Cleanup(func() { producer.Held.DropJob("job") })
	if files := stageFiles(t, producer.WorkDir, "job", 1); len(files) > 0 {
		t.Fatalf("files written for a held output: %v", files)
	}
	if producer.Held.Outputs() != 1 || producer.Held.Used() <= 0 || pool.Used() != producer.Held.Used() {
		t.Fatalf("held %d outputs, %d bytes, pool %d: want one output, its bytes in the pool", producer.Held.Outputs(), producer.Held.Used(), pool.Used())
	}
	for _, l := range slices.Concat(parts...) {
		if _, err := os.Stat(l.Path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a held output's path %s is a file (%v)", l.Path, err)
		}
	}
	remote := &Env{ExecutorID: "e2", Clients: NewClientPool(nil), MaxFetchBytes: 1 << 20}
	t.Cleanup(func() { remote.Clients.Close() })
	for _, reader := range []*Env{producer, remote} {
		if got := readStage(t, reader, parts); !slices.Equal(got, expectedRows(900)) {
			t.Fatalf("%s read %d rows, want 900 (contents differ)", reader.ExecutorID, len(got))
		}
	}
	producer.Held.DropJob("job")
	if producer.Held.Outputs() != 0 || producer.Held.Used() != 0 || pool.Used() != 0 {
		t.Fatalf("after dropping the job: %d outputs, %d bytes held, pool %d", producer.Held.Outputs(), producer.Held.Used(), pool.Used())
	}
	if _, _, ok, _ := producer.Held.batches(parts[0][0].Path, nil); ok {
		t.Fatal("a dropped output is still served")
	}
}

// TestHeldOutputsAnyBudget: whatever the budget, every row is read back
// once; an output that outgrows it is a file holding every batch (the
// ones held before it came first), and nothing stays reserved for it. The
// budget is drawn at random, so no answer depends on the default.
func TestHeldOutputsAnyBudget(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	// What the stage's output takes when all of it is held.
	probe := heldEnv(t, 1<<30, nil)
	writeStage(t, probe, "job", 1, 900, 4)
	whole := probe.Held.Used()
	probe.Held.DropJob("job")
	for range 8 {
		limit := rng.Int64N(whole + whole/4)
		env := heldEnv(t, limit, nil)
		parts := writeStage(t, env, "job", 1, 900, 4)
		t.Cleanup(func() { env.Held.DropJob("job") })
		held, files := env.Held.Outputs(), stageFiles(t, env.WorkDir, "job", 1)
		switch {
		case limit >= whole && (held != 1 || len(files) != 0):
			t.Fatalf("budget %d of %d: %d held, files %v; want the output held", limit, whole, held, files)
		case limit < whole && (held != 0 || len(files) != 1 || env.Held.Used() != 0):
			t.Fatalf("budget %d of %d: %d held (%d bytes), files %v; want one file and nothing held", limit, whole, held, env.Held.Used(), files)
		}
		if got := readStage(t, env, parts); !slices.Equal(got, expectedRows(900)) {
			t.Fatalf("budget %d of %d: read %d rows, want 900 (contents differ)", limit, whole, len(got))
		}
	}
}

// TestHeldOutputsPoolRefuses: an executor pool without room for the
// output makes it a file, and gives back what the held part reserved.
func TestHeldOutputsPoolRefuses(t *testing.T) {
	pool := mempool.NewPool("executor", 2000, nil)
	env := heldEnv(t, 1<<30, pool)
	parts := writeStage(t, env, "job", 1, 900, 4)
	if env.Held.Outputs() != 0 || pool.Used() != 0 {
		t.Fatalf("%d outputs held, pool holds %d; want a file and nothing reserved", env.Held.Outputs(), pool.Used())
	}
	if files := stageFiles(t, env.WorkDir, "job", 1); len(files) != 1 {
		t.Fatalf("files %v, want one", files)
	}
	if got := readStage(t, env, parts); !slices.Equal(got, expectedRows(900)) {
		t.Fatalf("read %d rows, want 900 (contents differ)", len(got))
	}
}

// TestHeldOutputsFailedTaskHoldsNothing: a task that fails or is
// cancelled leaves nothing held or reserved, and no file.
func TestHeldOutputsFailedTaskHoldsNothing(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		checkGoroutines(t)
		pool := mempool.NewPool("executor", 1<<30, nil)
		env := &Env{ExecutorID: "e1", WorkDir: t.TempDir(), Held: NewHeldOutputs(1<<30, pool)}
		tc, _ := checkedTC(t, taskEnv(env, "j", 1, 0))
		src := &source{parts: [][][2]int{{{0, 300}}, {{300, 300}}, {{600, 10}}}, failErr: errors.New("boom")}
		ctx, stop := context.WithCancel(context.Background())
		if cancel {
			src.failErr, src.block = nil, true
			stop()
		}
		_, err := NewShuffleWriter(src, "j", 1, hashPart(3)).RunTask(ctx, []int{0, 1, 2}, tc)
		stop()
		if err == nil {
			t.Fatal("the task succeeded")
		}
		if env.Held.Outputs() != 0 || env.Held.Used() != 0 || pool.Used() != 0 {
			t.Errorf("after a failed task: %d outputs, %d bytes held, pool %d", env.Held.Outputs(), env.Held.Used(), pool.Used())
		}
		if files := stageFiles(t, env.WorkDir, "j", 1); len(files) > 0 {
			t.Errorf("files left behind: %v", files)
		}
	}
}

// TestHeldOutputsJobs: Jobs lists the jobs holding outputs, by the age of
// their last one.
func TestHeldOutputsJobs(t *testing.T) {
	h := NewHeldOutputs(1<<20, nil)
	if !h.reserve(10) {
		t.Fatal("no room for 10 bytes in 1 MiB")
	}
	h.add("/w/a/s1-0-1.arrow", "a", testSchema, nil, 10)
	now := time.Now()
	if got := h.Jobs(0, now); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Jobs = %v, want [a]", got)
	}
	if got := h.Jobs(time.Hour, now); len(got) != 0 {
		t.Errorf("Jobs older than an hour = %v, want none", got)
	}
	if got := h.Jobs(time.Millisecond, now.Add(time.Second)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Jobs older than 1ms, a second on = %v, want [a]", got)
	}
	h.Close()
	if h.Used() != 0 || len(h.Jobs(0, now)) != 0 {
		t.Errorf("after Close: %d bytes, jobs %v", h.Used(), h.Jobs(0, now))
	}
	var none *HeldOutputs
	if none.reserve(1) || none.Outputs() != 0 {
		t.Error("a nil HeldOutputs holds something")
	}
}
