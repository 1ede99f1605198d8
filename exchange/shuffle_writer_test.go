package exchange

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical"
	"sluice/physical/mempool"
	"sluice/rpc"
)

func taskEnv(env *Env, job string, stage, task int) *TaskEnv {
	return &TaskEnv{Env: env, JobID: job, StageID: stage, TaskID: task}
}

// readBatches returns the rows of a shuffle file's batches (nil: all).
func readBatches(t *testing.T, path string, batches []int32) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f, r, err := openShuffleFile(path, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer r.Close()
	which, err := batchesOf(r, batches)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, i := range which {
		b, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, batchRows(b)...)
		b.Release()
	}
	return rows
}

func TestShuffleWriterSplitsRows(t *testing.T) {
	tests := []struct {
		name       string
		part       physical.Partitioning
		src        *source
		partitions []int
		rows       int
	}{
		{name: "hash 4 ways", part: hashPart(4), src: rowsSource(3, 1000, 64), partitions: []int{0, 1, 2}, rows: 1000},
		{name: "hash, one task of two", part: hashPart(5), src: rowsSource(2, 500, 50), partitions: []int{1}, rows: 250},
		{name: "pass-through", part: physical.Partitioning{Kind: physical.PartUnknown}, src: rowsSource(3, 300, 40), partitions: []int{0, 1, 2}, rows: 300},
		{name: "pass-through with an empty input partition", part: physical.Partitioning{Kind: physical.PartUnknown},
			src: &source{parts: [][][2]int{{{0, 10}}, nil, {{10, 5}}}}, partitions: []int{0, 1, 2}, rows: 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			env := &Env{ExecutorID: "e1", FlightAddress: "127.0.0.1:1", WorkDir: t.TempDir()}
			tc, _ := checkedTC(t, taskEnv(env, "job1", 2, 0))
			w := NewShuffleWriter(tt.src, "job1", 2, tt.part)
			locs, err := w.RunTask(context.Background(), tt.partitions, tc)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			seen := map[[2]int32]bool{}
			for _, l := range locs {
				if l.JobId != "job1" || l.StageId != 2 || l.ExecutorId != "e1" || l.FlightAddress != "127.0.0.1:1" {
					t.Errorf("location identity wrong: %v", l)
				}
				if !slices.Contains(tt.partitions, int(l.MapPartition)) {
					t.Errorf("location for map partition %d not run by the task", l.MapPartition)
				}
				if seen[[2]int32{l.MapPartition, l.Partition}] {
					t.Errorf("two locations for %d/%d", l.MapPartition, l.Partition)
				}
				seen[[2]int32{l.MapPartition, l.Partition}] = true
				// One file for the task, a file of stage 2 in the job's directory.
				if l.Path != locs[0].Path || filepath.Dir(l.Path) != jobDir(env.WorkDir, "job1") || !isStageFile(filepath.Base(l.Path), 2) {
					t.Errorf("path %s: want the task's one file in the stage's directory", l.Path)
				}
				st, err := os.Stat(l.Path)
				if err != nil || l.NumBytes <= 0 || st.Size() < l.NumBytes {
					t.Errorf("file %s: %v, size %v, location says %d", l.Path, err, st, l.NumBytes)
				}
				rows := readBatches(t, l.Path, l.Batches)
				if int64(len(rows)) != l.NumRows || l.NumRows == 0 {
					t.Errorf("file %s has %d rows, location says %d", l.Path, len(rows), l.NumRows)
				}
				total += l.NumRows
				for _, row := range rows {
					var k int64
					for _, c := range row {
						if c == '|' {
							break
						}
						k = k*10 + int64(c-'0')
					}
					want := int(l.MapPartition)
					if tt.part.Kind == physical.PartHash {
						want = keyPartition(t, k, tt.part.Count)
					}
					if int(l.Partition) != want {
						t.Fatalf("key %d in output partition %d, want %d", k, l.Partition, want)
					}
				}
			}
			if total != int64(tt.rows) {
				t.Errorf("wrote %d rows, want %d", total, tt.rows)
			}
			for _, f := range stageFiles(t, env.WorkDir, "job1", 2) {
				if !slices.ContainsFunc(locs, func(l *rpc.PartitionLocation) bool { return l.Path == env.WorkDir+f }) {
					t.Errorf("stray file %s", f)
				}
			}
		})
	}
}

func TestShuffleWriterCompresses(t *testing.T) {
	for _, codec := range []Compression{"", CompressLZ4, CompressNone} {
		t.Run(string(codec), func(t *testing.T) {
			testShuffleWriterCompresses(t, codec)
		})
	}
}

func testShuffleWriterCompresses(t *testing.T, codec Compression) {
	env := &Env{ExecutorID: "e1", WorkDir: t.TempDir(), Compression: codec}
	tc, mem := checkedTC(t, taskEnv(env, "j", 0, 0))
	src := rowsSource(1, 20000, 1000)
	locs, err := NewShuffleWriter(src, "j", 0, physical.Partitioning{Kind: physical.PartUnknown}).RunTask(context.Background(), []int{0}, tc)
	if err != nil {
		t.Fatal(err)
	}
	// The same batches written uncompressed.
	var plain bytes.Buffer
	w, err := ipc.NewFileWriter(&plain, ipc.WithSchema(testSchema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	for from := 0; from < 20000; from += 1000 {
		b := makeBatch(mem, from, 1000)
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(locs) != 1 {
		t.Fatalf("%d files, want 1", len(locs))
	}
	st, err := os.Stat(locs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if codec == CompressNone {
		if st.Size() != int64(plain.Len()) {
			t.Fatalf("file is %d bytes, want %d as written uncompressed", st.Size(), plain.Len())
		}
		return
	}
	if st.Size()*10 > int64(plain.Len())*9 || locs[0].NumBytes > st.Size() {
		t.Fatalf("file is %d bytes (the partition %d), %d uncompressed: not compressed", st.Size(), locs[0].NumBytes, plain.Len())
	}
}

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]Compression{"lz4": CompressLZ4, " LZ4 ": CompressLZ4, "none": CompressNone} {
		if got, err := ParseCompression(in); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseCompression("zstd"); err == nil || !strings.Contains(err.Error(), "want lz4 or none") {
		t.Errorf("ParseCompression(zstd) error = %v, want one naming the choices", err)
	}
}

func TestShuffleWriterFailureRemovesFiles(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		src    *source
		cancel bool
		want   error
	}{
		{name: "input fails", src: &source{parts: [][][2]int{{{0, 300}}, {{300, 300}}}, failErr: boom}, want: boom},
		{name: "cancelled", src: &source{parts: [][][2]int{{{0, 300}}, {{300, 300}}}, block: true}, cancel: true, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			env := &Env{ExecutorID: "e1", WorkDir: t.TempDir()}
			tc, _ := checkedTC(t, taskEnv(env, "j", 1, 0))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// A partition that finishes (and commits its files) alongside
			// the failing ones: its files must go too.
			tt.src.parts = append(tt.src.parts, [][2]int{{600, 10}})
			done := make(chan error, 1)
			go func() {
				_, err := NewShuffleWriter(tt.src, "j", 1, hashPart(3)).RunTask(ctx, []int{0, 1, 2}, tc)
				done <- err
			}()
			if tt.cancel {
				cancel()
			}
			err := <-done
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if files := stageFiles(t, env.WorkDir, "j", 1); len(files) > 0 {
				t.Errorf("files left behind: %v", files)
			}
		})
	}
}

func TestShuffleWriterRejectsBadInput(t *testing.T) {
	env := &Env{ExecutorID: "e1", WorkDir: t.TempDir()}
	tc, _ := checkedTC(t, taskEnv(env, "j", 1, 0))
	tests := []struct {
		name string
		w    *ShuffleWriter
		tc   *physical.TaskContext
		in   []int
	}{
		{name: "job id escapes the work dir", w: NewShuffleWriter(rowsSource(1, 1, 1), "../x", 1, hashPart(2)), tc: tc, in: []int{0}},
		{name: "no keys", w: NewShuffleWriter(rowsSource(1, 1, 1), "j", 1, physical.Partitioning{Kind: physical.PartHash, Count: 2}), tc: tc, in: []int{0}},
		{name: "partition out of range", w: NewShuffleWriter(rowsSource(1, 1, 1), "j", 1, hashPart(2)), tc: tc, in: []int{1}},
		{name: "no task env", w: NewShuffleWriter(rowsSource(1, 1, 1), "j", 1, hashPart(2)), tc: physical.NewTaskContext(), in: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.w.RunTask(context.Background(), tt.in, tt.tc); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestShuffleWriterChargesBuffers(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		fail  bool
	}{
		{name: "within the pool", limit: 0},
		{name: "pool too small", limit: 1000, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &Env{ExecutorID: "e1", WorkDir: t.TempDir()}
			tc, _ := checkedTC(t, taskEnv(env, "j", 1, 0))
			tc.Memory = mempool.NewPool("task", tt.limit, nil)
			_, err := NewShuffleWriter(rowsSource(2, 1000, 30), "j", 1, hashPart(4)).RunTask(context.Background(), []int{0, 1}, tc)
			if tt.fail != errors.Is(err, mempool.ErrResourcesExhausted) || (!tt.fail && err != nil) {
				t.Fatalf("error %v", err)
			}
			if tc.Memory.Used() != 0 {
				t.Errorf("%d bytes still reserved", tc.Memory.Used())
			}
			if tt.fail {
				if files := stageFiles(t, env.WorkDir, "j", 1); len(files) > 0 {
					t.Errorf("files left behind: %v", files)
				}
			} else if tc.Memory.Peak() == 0 {
				t.Error("buffers were not charged to the pool")
			}
		})
	}
}
