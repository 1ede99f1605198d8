package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
	"sluice/physical/expr"
)

// testSchema is (k int64, s utf8): k is the partition key.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var keyK = &expr.Column{Index: 0, Name: "k", Type: arrow.PrimitiveTypes.Int64}

func hashPart(n int) physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartHash, Count: n, Keys: []expr.Expr{keyK}}
}

// makeBatch builds rows k = from..from+n-1, s = "v<k>".
func makeBatch(mem memory.Allocator, from, n int) arrow.RecordBatch {
	kb := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	defer kb.Release()
	defer sb.Release()
	for i := from; i < from+n; i++ {
		kb.Append(int64(i))
		if i%7 == 0 {
			sb.AppendNull()
		} else {
			sb.Append(fmt.Sprintf("v%d", i))
		}
	}
	k, s := kb.NewArray(), sb.NewArray()
	defer k.Release()
	defer s.Release()
	return array.NewRecordBatch(testSchema, []arrow.Array{k, s}, int64(n))
}

// source is a test operator: partition p yields parts[p]'s batches
// (built lazily with the task's allocator), then fails with failAt's error
// if set, or blocks until ctx is done if block is set.
type source struct {
	parts   [][][2]int // per partition: (from, n) of each batch
	failErr error      // returned after the batches
	block   bool       // block after the batches until ctx is done
}

// rowsSource spreads keys 0..rows-1 over parts partitions in batches of
// batch rows.
func rowsSource(parts, rows, batch int) *source {
	s := &source{parts: make([][][2]int, parts)}
	per := (rows + parts - 1) / parts
	for p := 0; p < parts; p++ {
		lo, hi := p*per, min((p+1)*per, rows)
		for from := lo; from < hi; from += batch {
			s.parts[p] = append(s.parts[p], [2]int{from, min(batch, hi-from)})
		}
	}
	return s
}

func (s *source) Schema() *arrow.Schema         { return testSchema }
func (s *source) Children() []physical.Operator { return nil }
func (s *source) String() string                { return "source" }
func (s *source) OutputPartitioning() physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: len(s.parts)}
}

func (s *source) Execute(_ context.Context, p int, tc *physical.TaskContext) (physical.Stream, error) {
	return &sourceStream{s: s, batches: s.parts[p], mem: tc.Alloc}, nil
}

type sourceStream struct {
	s       *source
	batches [][2]int
	mem     memory.Allocator
}

func (st *sourceStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(st.batches) > 0 {
		b := st.batches[0]
		st.batches = st.batches[1:]
		return makeBatch(st.mem, b[0], b[1]), nil
	}
	if st.s.failErr != nil {
		return nil, st.s.failErr
	}
	if st.s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, io.EOF
}

func (st *sourceStream) Close() {}

// checkedTC returns a task context with a checked allocator, asserting at
// cleanup that everything allocated was released.
func checkedTC(t *testing.T, env any) (*physical.TaskContext, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { assertReleased(t, mem) })
	tc := physical.NewTaskContext()
	tc.Alloc = mem
	tc.BatchSize = 100
	tc.Exchange = env
	return tc, mem
}

// assertReleased asserts that everything allocated from mem was released.
// A Flight handler whose consumer went away (a reader that failed on
// another producer's error) is still sending, and then releasing, its
// batch when the test's body returns: it gets as long as checkGoroutines
// gives goroutines to end before anything counts as leaked.
func assertReleased(t *testing.T, mem *memory.CheckedAllocator) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a count that cannot be awaited
	}
	mem.AssertSize(t, 0)
}

// checkGoroutines fails the test if goroutines started during it are still
// running at cleanup. Register it first: cleanups run last-in first-out.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(10 * time.Millisecond) // polling a count that cannot be awaited
		}
	})
}

// bindJobSecret gives env job secrets with job "job" bound to "secret",
// so its Flight service checks the capabilities readers present.
func bindJobSecret(t *testing.T, env *Env) {
	t.Helper()
	env.Secrets = NewJobSecrets()
	if err := env.Secrets.Bind("job", "secret"); err != nil {
		t.Fatal(err)
	}
}

// newExecutorEnv returns an executor Env with its own work dir, registry
// and Flight service on 127.0.0.1:0; the service uses a checked allocator.
func newExecutorEnv(t *testing.T, id string) (*Env, *FlightService) {
	t.Helper()
	env := &Env{ExecutorID: id, WorkDir: t.TempDir(), Registry: NewRegistry(), Clients: NewClientPool(nil), ProducerWait: 5 * time.Second}
	t.Cleanup(func() { env.Clients.Close() })
	svc := NewFlightService(env)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	svc.Alloc = mem
	env.FlightAddress = serve(t, svc)
	t.Cleanup(func() { assertReleased(t, mem) })
	return env, svc
}

// serve runs svc on a fresh local port until the test ends.
func serve(t *testing.T, svc *FlightService) string {
	t.Helper()
	srv := flight.NewServerWithMiddleware(nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.InitListener(lis)
	srv.RegisterFlightService(svc)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.Serve()
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Shutdown()
			wg.Wait()
		}
	}
	t.Cleanup(stop)
	return lis.Addr().String()
}

// readAll drains s, returning the rows as "k|s" strings (s "∅" for NULL).
func readAll(t *testing.T, s physical.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	var rows []string
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, batchRows(b)...)
		b.Release()
	}
}

func batchRows(b arrow.RecordBatch) []string {
	k := b.Column(0).(*array.Int64)
	s := b.Column(1).(*array.String)
	out := make([]string, b.NumRows())
	for i := range out {
		v := "∅"
		if s.IsValid(i) {
			v = s.Value(i)
		}
		out[i] = fmt.Sprintf("%d|%s", k.Value(i), v)
	}
	return out
}

// expectedRows is what rowsSource(_, rows, _) produces, sorted.
func expectedRows(rows int) []string {
	mem := memory.NewGoAllocator()
	b := makeBatch(mem, 0, rows)
	defer b.Release()
	out := batchRows(b)
	slices.Sort(out)
	return out
}

// keyPartition is the output partition physical.HashRows assigns key k.
func keyPartition(t *testing.T, k int64, n int) int {
	t.Helper()
	b := array.NewInt64Builder(memory.NewGoAllocator())
	b.Append(k)
	a := b.NewArray()
	defer a.Release()
	h := make([]uint64, 1)
	if err := physical.HashRows([]arrow.Array{a}, h); err != nil {
		t.Fatal(err)
	}
	return physical.PartitionOf(h[0], n)
}

// stageFiles lists the files (temporary ones included) under a stage dir.
func stageFiles(t *testing.T, workDir, job string, stage int) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(jobDir(workDir, job), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), fmt.Sprintf("s%d-", stage)) {
			files = append(files, strings.TrimPrefix(path, workDir))
		}
		return nil
	})
	return files
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
