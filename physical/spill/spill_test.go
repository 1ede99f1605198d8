package spill

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFile writes whole batches and small pieces to a spill file, reads
// every row back in order through two readers at once, and checks the
// file was never visible in its directory and the counters moved.
func TestFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func(from, n int) arrow.RecordBatch {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := range n {
			b.Append(int64(from + i))
		}
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))
	}
	dir := t.TempDir()
	files0, bytes0 := Stats()
	f, err := NewFile(dir, schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("spill file visible in its directory: %v", entries)
	}
	next := 0
	for range 3 {
		b := batch(next, 1000)
		next += 1000
		if err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
		for range 50 { // pieces of a few rows, held until they make a batch
			p := batch(next, 3)
			next += 3
			if err := f.Add(p); err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatalf("finishing twice: %v", err)
	}
	if f.Rows() != int64(next) {
		t.Errorf("Rows() = %d, want %d", f.Rows(), next)
	}
	readAll := func() []int64 {
		rd, err := ipc.NewReader(f.Reader(), ipc.WithAllocator(mem), ipc.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Release()
		var got []int64
		for rd.Next() {
			got = append(got, rd.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := readAll(), readAll()
	if len(a) != next || len(b) != next {
		t.Fatalf("read %d and %d rows, want %d", len(a), len(b), next)
	}
	for i := range a {
		if a[i] != int64(i) || b[i] != int64(i) {
			t.Fatalf("row %d: %d, %d", i, a[i], b[i])
		}
	}
	files1, bytes1 := Stats()
	if files1 != files0+1 || bytes1 <= bytes0 {
		t.Errorf("Stats went from %d files %d bytes to %d, %d", files0, bytes0, files1, bytes1)
	}
}

// TestBucket: each split level takes other bits of the hash, so one
// level's bucket spreads over every bucket of the next.
func TestBucket(t *testing.T) {
	for level := range 4 {
		seen := map[int]map[int]bool{}
		for i := range 1 << 14 {
			h := uint64(i) * 0x9e3779b97f4a7c15
			k := Bucket(h, 16, level)
			if k < 0 || k >= 16 {
				t.Fatalf("bucket %d of 16", k)
			}
			if seen[k] == nil {
				seen[k] = map[int]bool{}
			}
			seen[k][Bucket(h, 16, level+1)] = true
		}
		for k, sub := range seen {
			if len(seen) != 16 || len(sub) != 16 {
				t.Fatalf("level %d: %d buckets, bucket %d splits into %d", level, len(seen), k, len(sub))
			}
		}
	}
}
