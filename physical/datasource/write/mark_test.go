package write

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/plan"
)

// A DELETE's or UPDATE's write: the input's last column marks rows. The
// count is of the marked rows (NULL does not mark); a DELETE leaves them
// out of the files, an UPDATE writes every row, and a task whose rows
// were all deleted writes no file but still counts them.
func TestWriteMarkedRows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: plan.Int64, Nullable: true},
		{Name: "m", Type: plan.Bool, Nullable: true},
	}, nil)
	for _, mark := range []string{MarkDeleted, MarkUpdated} {
		for _, format := range []string{"parquet", "csv"} {
			t.Run(mark+"/"+format, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				src := newBatchSource(schema, [][]arrow.RecordBatch{
					{makeBatch(t, mem, schema, []any{1, 2, 3}, []any{true, false, nil}), makeBatch(t, mem, schema, []any{4}, []any{true})},
					{makeBatch(t, mem, schema, []any{5, 6}, []any{true, true})},
					{},
				})
				defer src.release()
				spec := Spec{Dir: filepath.Join(t.TempDir(), "t"), Format: format, Header: true, Delimiter: ',',
					Names: []string{"k"}, WriteID: NewID(), Mark: mark}
				n, err := runWrite(t, src, spec, newTestTC(mem, 8192))
				if err != nil {
					t.Fatal(err)
				}
				if n != 4 {
					t.Errorf("count %d, want the 4 marked rows", n)
				}
				want := []int64{1, 2, 3, 4, 5, 6}
				if mark == MarkDeleted {
					want = []int64{2, 3}
				}
				if got := readKeys(t, spec.Dir, format); !reflect.DeepEqual(got, want) {
					t.Errorf("the files hold %v, want %v", got, want)
				}
				if files := filesUnder(t, spec.Dir); mark == MarkDeleted && len(files) != 1 {
					t.Errorf("files %v: the task whose rows were all deleted wrote one", files)
				}
			})
		}
	}
	if _, err := NewFileSink(newBatchSource(schema, nil), Spec{Format: "csv", Names: []string{"k", "m"}, WriteID: NewID(), Mark: MarkDeleted}); err == nil {
		t.Error("a sink whose names include the mark column was accepted")
	}
	if got := specFromProto(specToProto(Spec{Mark: MarkUpdated})); got.Mark != MarkUpdated {
		t.Errorf("the mark did not survive the plan codec: %q", got.Mark)
	}
}

func readKeys(t *testing.T, dir, format string) []int64 {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: plan.Int64, Nullable: true}}, nil)
	var scan physical.Operator
	if format == "parquet" {
		pt, err := catalog.OpenParquet(dir)
		if err != nil {
			t.Fatal(err)
		}
		scan = physical.NewParquetScan("t", pt, []int{0}, nil, 1)
	} else {
		ct, err := catalog.OpenCSV(dir, catalog.CSVOptions{Header: true, Delimiter: ','}, schema)
		if err != nil {
			t.Fatal(err)
		}
		scan = physical.NewCSVScan("t", ct, []int{0}, 1)
	}
	var keys []int64
	for _, r := range collectAll(t, scan, physical.NewTaskContext()) {
		keys = append(keys, int64(r[0].(int)))
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	return keys
}

// RemoveReplaced removes exactly the listed files, and partition
// directories left empty; a file outside the directory, or one of the
// write's own, is refused before anything is removed.
func TestRemoveReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	spec := &Spec{Dir: dir, Format: "parquet", WriteID: NewID()}
	mk := func(rel string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old1, old2, old3 := mk("p=a/old-1.parquet"), mk("p=b/old-2.parquet"), mk("p=b/old-3.parquet")
	mine := mk("p=b/part-" + spec.WriteID + "-00000-0.parquet")
	added := mk("p=c/added.parquet")
	outside := filepath.Join(filepath.Dir(dir), "outside.parquet")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{old1, outside}, {old1, mine}, {dir}} {
		if err := RemoveReplaced(spec, bad); err == nil {
			t.Errorf("RemoveReplaced(%v) was accepted", bad)
		}
	}
	if got := filesUnder(t, dir); len(got) != 5 {
		t.Fatalf("a refused call removed files: %v", got)
	}
	for range 2 { // a repeated call finds them gone
		if err := RemoveReplaced(spec, []string{old1, old2, old3}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"p=b/" + filepath.Base(mine), "p=c/" + filepath.Base(added)}
	if got := filesUnder(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "p=a")); !os.IsNotExist(err) {
		t.Errorf("the emptied partition directory p=a stayed: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the file outside went: %v", err)
	}
}
