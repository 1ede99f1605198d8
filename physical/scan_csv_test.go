package physical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical/expr"
	"sluice/physical/kernels"
)

// writeCSVDir writes files with rows [0,40), [40,50), [50,120): columns
// id,name,day,price where name is empty (NULL) when id%5 == 0.
func writeCSVDir(t *testing.T) string {
	dir := t.TempDir()
	for i, r := range [][2]int{{0, 40}, {40, 50}, {50, 120}} {
		var b strings.Builder
		b.WriteString("id,name,day,price\n")
		for id := r[0]; id < r[1]; id++ {
			name := fmt.Sprintf("n%d", id)
			if id%5 == 0 {
				name = ""
			}
			fmt.Fprintf(&b, "%d,%s,2024-01-%02d,%d.25\n", id, name, id%28+1, id)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part%d.csv", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCSVScan(t *testing.T) {
	dir := writeCSVDir(t)
	tbl, err := catalog.OpenCSV(dir, catalog.CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range []int{1, 2, 4} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		scan := NewCSVScan("t", tbl, []int{1, 0, 2}, parts)
		if got := scan.String(); got != fmt.Sprintf("CSVScan: t files=3 partitions=%d projection=[name, id, day]", parts) {
			t.Fatalf("String() = %q", got)
		}
		tc := testTaskContext(mem, 16)
		results := make([][]arrow.RecordBatch, parts)
		var wg sync.WaitGroup
		for p := range parts {
			wg.Go(func() { results[p] = drainPartition(t, scan, p, tc) })
		}
		wg.Wait()
		seen := make([]int, 120)
		for _, bs := range results {
			for _, b := range bs {
				names := b.Column(0).(*array.String)
				ids := b.Column(1).(*array.Int64)
				days := b.Column(2).(*array.Date32)
				for r := 0; r < int(b.NumRows()); r++ {
					id := ids.Value(r)
					seen[id]++
					if wantNull := id%5 == 0; names.IsNull(r) != wantNull || (!wantNull && names.Value(r) != fmt.Sprintf("n%d", id)) {
						t.Fatalf("id %d: name %q null=%v", id, names.ValueStr(r), names.IsNull(r))
					}
					if got, want := days.Value(r).FormattedString(), fmt.Sprintf("2024-01-%02d", id%28+1); got != want {
						t.Fatalf("id %d: day %s, want %s", id, got, want)
					}
				}
			}
			kernels.ReleaseAll(bs)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("partitions=%d: id %d read %d times", parts, id, n)
			}
		}
		mem.AssertSize(t, 0)
	}
}

func TestCSVScanSchemaAndErrors(t *testing.T) {
	dir := writeCSVDir(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	tbl, err := catalog.OpenCSV(dir, catalog.CSVOptions{Header: true}, schema)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	// Declared types: decimal prices, empty projection counts rows.
	bs := drainPartition(t, NewCSVScan("t", tbl, []int{3}, 1), 0, testTaskContext(mem, 1000))
	total := 0
	for _, b := range bs {
		prices := b.Column(0).(*array.Decimal128)
		for r := 0; r < int(b.NumRows()); r++ {
			if !strings.HasSuffix(prices.ValueStr(r), ".25") {
				t.Fatalf("price %s", prices.ValueStr(r))
			}
		}
		total += int(b.NumRows())
	}
	kernels.ReleaseAll(bs)
	if total != 120 {
		t.Fatalf("%d rows, want 120", total)
	}
	bs = drainPartition(t, NewCSVScan("t", tbl, nil, 2), 1, testTaskContext(mem, 1000))
	if len(bs) == 0 || bs[0].NumCols() != 0 {
		t.Fatalf("empty projection: %v", bs)
	}
	kernels.ReleaseAll(bs)

	// A value that does not parse as the declared type is an error, not NULL.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("id,name,day,price\n1,a,2024-01-01,1.5\nx,b,2024-01-02,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, err = catalog.OpenCSV(bad, catalog.CSVOptions{Header: true}, schema)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewCSVScan("bad", tbl, []int{0}, 1).Execute(context.Background(), 0, testTaskContext(mem, 1000))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		b, err := s.Next(context.Background())
		if err == nil {
			b.Release()
			continue
		}
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "bad.csv") {
			t.Fatalf("parse error: got %v, want an error naming the file", err)
		}
		break
	}
}

// TestCSVScanRecordLimit checks that a file which changed after CREATE
// EXTERNAL TABLE to hold one endless line fails the scan naming the file
// and line, rather than growing one record until memory runs out.
func TestCSVScanRecordLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte("a\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, err := catalog.OpenCSV(path, catalog.CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := "a\nx\n" + strings.Repeat("y", catalog.MaxCSVRecordBytes+1)
	if err := os.WriteFile(path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s, err := NewCSVScan("t", tbl, []int{0}, 1).Execute(context.Background(), 0, testTaskContext(mem, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		b, err := s.Next(context.Background())
		if err == nil {
			b.Release()
			continue
		}
		want := "read " + path + ": the record starting at line 3 is longer than"
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want an error containing %q", err, want)
		}
		return
	}
}

// TestCSVReadErrorKinds: values that do not parse and malformed records
// are data errors (never retried), other failures are not.
func TestCSVReadErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		err  error
		data bool
		msg  string
	}{
		{&strconv.NumError{Func: "ParseInt", Num: "abc", Err: strconv.ErrSyntax}, true, `CSV file f.csv, records 3 to 4: invalid input syntax for its column's type: "abc"`},
		{&strconv.NumError{Func: "ParseInt", Num: "9e99", Err: strconv.ErrRange}, true, `CSV file f.csv, records 3 to 4: value "9e99" out of range for its column's type`},
		{fmt.Errorf("wrapped: %w", csv.ErrMismatchFields), true, "CSV file f.csv, records 3 to 4: wrong number of fields"},
		{os.ErrPermission, false, "read f.csv: permission denied"},
	} {
		err := csvReadError("f.csv", 2, 2, tc.err)
		var de *expr.DataError
		if errors.As(err, &de) != tc.data || err.Error() != tc.msg {
			t.Errorf("%v: got %q (data error: %v), want %q (%v)", tc.err, err, errors.As(err, &de), tc.msg, tc.data)
		}
	}
}
