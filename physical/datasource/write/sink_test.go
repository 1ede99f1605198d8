package write

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/internal/testutil"
	"sluice/plan"
)

var writeTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: plan.Int32, Nullable: true},
	{Name: "b", Type: plan.Int64, Nullable: true},
	{Name: "f", Type: plan.Float64, Nullable: true},
	{Name: "d", Type: plan.Decimal(10, 2), Nullable: true},
	{Name: "dt", Type: plan.Date32, Nullable: true},
	{Name: "ts", Type: plan.Timestamp, Nullable: true},
	{Name: "s", Type: plan.Utf8, Nullable: true},
	{Name: "bo", Type: plan.Bool, Nullable: true},
	// Decimals of up to 9 digits are stored as INT32, up to 18 as INT64,
	// wider ones as fixed-length bytes.
	{Name: "d9", Type: plan.Decimal(9, 3), Nullable: true},
	{Name: "d38", Type: plan.Decimal(38, 6), Nullable: true},
}, nil)

// writeTestSource is two partitions of rows of every writable type,
// NULLs included; s holds values that must be escaped as directory names.
func writeTestSource(t *testing.T, mem memory.Allocator) *batchSource {
	b1 := makeBatch(t, mem, writeTestSchema,
		[]any{1, 2, nil}, []any{10, nil, 30}, []any{1.5, nil, -2.25}, []any{12345, -1, nil},
		[]any{19000, nil, 0}, []any{int64(1_700_000_000_000_000), nil, 0}, []any{"a", "../x", nil}, []any{true, false, nil},
		[]any{-999999999, nil, 1}, []any{nil, 123456789012345, -1})
	b2 := makeBatch(t, mem, writeTestSchema,
		[]any{4}, []any{40}, []any{4.0}, []any{400}, []any{19001}, []any{int64(1)}, []any{"a"}, []any{true}, []any{4}, []any{4})
	b3 := makeBatch(t, mem, writeTestSchema,
		[]any{5, 6}, []any{50, 60}, []any{5.0, 6.0}, []any{500, 600}, []any{1, 2}, []any{int64(5), int64(6)}, []any{"a/b", "c d"}, []any{false, false},
		[]any{5, 6}, []any{5, 6})
	return newBatchSource(writeTestSchema, [][]arrow.RecordBatch{{b1, b2}, {b3}})
}

// poisonAllocator overwrites memory as it is freed, so a string still
// aliasing a released batch's buffer reads garbage instead of passing by
// luck (pooled allocators reuse freed memory at once).
type poisonAllocator struct{ memory.Allocator }

func (p poisonAllocator) Free(b []byte) {
	for i := range b {
		b[i] = '#'
	}
	p.Allocator.Free(b)
}

func writeTestSpec(dir, format string, partitionBy ...int) Spec {
	return Spec{Dir: dir, Format: format, Header: true, Delimiter: ',', Names: []string{"i", "b", "f", "d", "dt", "ts", "s", "bo", "d9", "d38"},
		PartitionBy: partitionBy, WriteID: NewID()}
}

// runWrite runs WriteCommit(Coalesce(FileSink(src))) and, as the job's
// runner does once it succeeded, commits the files; it returns the count.
func runWrite(t *testing.T, src physical.Operator, spec Spec, tc *physical.TaskContext) (int64, error) {
	t.Helper()
	sink, err := NewFileSink(src, spec)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		t.Fatal(err)
	}
	n, err := execCount(t, commit, tc)
	if err != nil {
		return 0, err
	}
	return n, CommitFiles(&spec, tc.Commit.Files())
}

func execCount(t *testing.T, op physical.Operator, tc *physical.TaskContext) (int64, error) {
	t.Helper()
	if tc.Commit == nil {
		tc.Commit = &physical.CommitList{}
	}
	s, err := op.Execute(context.Background(), 0, tc)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	b, err := s.Next(context.Background())
	if err != nil {
		return 0, err
	}
	defer b.Release()
	if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("second batch: %v", err)
	}
	return int64(testutil.Cell(b.Column(0), 0).(int)), nil
}

// filesUnder lists the files under dir, relative and sorted.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var allColumns = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}

// readBack scans the written directory with sluice's own scans.
func readBack(t *testing.T, dir, format string) [][]any {
	t.Helper()
	var scan physical.Operator
	if format == "parquet" {
		pt, err := catalog.OpenParquet(dir)
		if err != nil {
			t.Fatal(err)
		}
		scan = physical.NewParquetScan("t", pt, allColumns, nil, 2)
	} else {
		ct, err := catalog.OpenCSV(dir, catalog.CSVOptions{Header: true, Delimiter: ','}, writeTestSchema)
		if err != nil {
			t.Fatal(err)
		}
		scan = physical.NewCSVScan("t", ct, allColumns, 2)
	}
	return collectAll(t, scan, physical.NewTaskContext())
}

func TestWriteRoundTrip(t *testing.T) {
	for _, format := range []string{"parquet", "csv"} {
		for _, partitioned := range []bool{false, true} {
			name := format
			if partitioned {
				name += "/partition_by"
			}
			t.Run(name, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(poisonAllocator{memory.NewGoAllocator()})
				defer mem.AssertSize(t, 0)
				src := writeTestSource(t, mem)
				defer src.release()
				want := sortedRowsString(collectAll(t, src, newTestTC(mem, 8192)))
				dir := filepath.Join(t.TempDir(), "out")
				var parts []int
				if partitioned {
					parts = []int{6}
				}
				spec := writeTestSpec(dir, format, parts...)
				n, err := runWrite(t, src, spec, newTestTC(mem, 8192))
				if err != nil {
					t.Fatal(err)
				}
				if n != 6 {
					t.Fatalf("count %d, want 6", n)
				}
				files := filesUnder(t, dir)
				for _, f := range files {
					if strings.Contains(f, ".tmp-") {
						t.Errorf("temporary file left: %s", f)
					}
				}
				if partitioned {
					joined := strings.Join(files, "\n")
					for _, d := range []string{"s=a/", "s=..%2Fx/", "s=NULL/", "s=a%2Fb/", "s=c%20d/"} {
						if !strings.Contains(joined, d) {
							t.Errorf("no directory %s in\n%s", d, joined)
						}
					}
				} else if len(files) != 2 {
					t.Errorf("files %v, want one per partition", files)
				}
				if got := sortedRowsString(readBack(t, dir, format)); got != want {
					t.Errorf("read back:\n%s\nwant:\n%s", got, want)
				}
			})
		}
	}
}

// A failing partition removes what it wrote; the temporary files of the
// partitions that finished go with the job's leftovers, and nothing is
// ever committed.
func TestFileSinkFailureRemovesItsFiles(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := writeTestSource(t, mem)
	defer src.release()
	src.errPart, src.errAt = 0, 1
	dir := filepath.Join(t.TempDir(), "out")
	spec := writeTestSpec(dir, "parquet", 6)
	_, err := runWrite(t, src, spec, newTestTC(mem, 8192))
	if !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	for _, f := range filesUnder(t, dir) {
		if !strings.Contains(f, spec.tempPrefix()+"00001-") {
			t.Errorf("file left by the failed partition, or committed: %s", f)
		}
	}
	if err := RemoveLeftovers(&spec, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("left after the job's cleanup: %v", filesUnder(t, dir))
	}
}

// Two attempts of the same task, and a commit run twice: exactly one
// final file per task, no temporary file once the leftovers are removed.
func TestWriteRetriedAttemptsCommitOnce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := writeTestSource(t, mem)
	defer src.release()
	dir := filepath.Join(t.TempDir(), "out")
	spec := writeTestSpec(dir, "parquet")
	sink, err := NewFileSink(src, spec)
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt of partition 0 wrote its file and was then lost;
	// the second attempt's listing is the one that reaches the commit.
	for attempt := 0; attempt < 2; attempt++ {
		rows := collectPartitions(t, sink, newTestTC(mem, 8192))
		if len(rows[0]) != 1 || rows[0][0][2] != 4 {
			t.Fatalf("listing %v", rows)
		}
	}
	if n := len(filesUnder(t, dir)); n != 4 {
		t.Fatalf("%d temporary files, want 4 (2 partitions x 2 attempts)", n)
	}
	commit, err := NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 8192)
	n, err := execCount(t, commit, tc)
	if err != nil || n != 6 {
		t.Fatalf("commit task: %d, %v", n, err)
	}
	// Nothing is renamed before the job's runner commits.
	for _, f := range filesUnder(t, dir) {
		if !strings.HasPrefix(f, ".tmp-") {
			t.Fatalf("%s renamed before the commit", f)
		}
	}
	if len(tc.Commit.Files()) != 2 {
		t.Fatalf("commit list %v, want one file per partition", tc.Commit.Files())
	}
	if err := CommitFiles(&spec, tc.Commit.Files()); err != nil {
		t.Fatal(err)
	}
	if err := RemoveLeftovers(&spec, false); err != nil {
		t.Fatal(err)
	}
	files := filesUnder(t, dir)
	if len(files) != 2 || !strings.HasPrefix(files[0], "part-") || !strings.HasPrefix(files[1], "part-") {
		t.Fatalf("files %v, want two committed parts", files)
	}
	if got := len(readBack(t, dir, "parquet")); got != 6 {
		t.Fatalf("read back %d rows, want 6", got)
	}
	// A commit repeated (the scheduler restarted half way) finds the
	// renames done.
	if err := CommitFiles(&spec, tc.Commit.Files()); err != nil {
		t.Fatalf("repeated commit: %v", err)
	}
	// A failed job's committed files go too.
	if err := RemoveLeftovers(&spec, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory of a failed write still there: %v", filesUnder(t, dir))
	}
}

// The commit renames only files of its own write under its directory.
func TestWriteCommitRefusesForeignPaths(t *testing.T) {
	dir := t.TempDir()
	spec := writeTestSpec(dir, "parquet")
	for _, c := range [][2]string{
		{"/etc/passwd", filepath.Join(dir, spec.finalName(0, 0))},
		{filepath.Join(dir, spec.tempName(0, 0, "x")), filepath.Join(dir, "../evil.parquet")},
		{filepath.Join(dir, "other"), filepath.Join(dir, spec.finalName(0, 0))},
	} {
		if err := commitFile(&spec, c[0], c[1]); err == nil {
			t.Errorf("commit %s -> %s accepted", c[0], c[1])
		}
	}
}

func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	spec := writeTestSpec(filepath.Join(dir, "new"), "parquet")
	if err := CheckTarget(&spec, false, "COPY"); err != nil {
		t.Fatalf("absent directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Dir = dir
	if err := CheckTarget(&spec, false, "COPY"); err == nil || !strings.Contains(err.Error(), "OVERWRITE true") {
		t.Fatalf("non-empty directory: %v", err)
	}
	if err := CheckTarget(&spec, true, "INSERT"); err != nil {
		t.Fatalf("append: %v", err)
	}
	spec.Overwrite = true
	if err := CheckTarget(&spec, false, "COPY"); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	spec.Dir = filepath.Join(dir, "f")
	if err := CheckTarget(&spec, false, "COPY"); err == nil {
		t.Fatal("a file accepted as the target directory")
	}
	// Writes obey the allowed locations as reads do.
	allowed, err := catalog.NewLocations([]string{filepath.Join(dir)})
	if err != nil {
		t.Fatal(err)
	}
	catalog.RestrictLocations(allowed)
	defer catalog.RestrictLocations(nil)
	spec = writeTestSpec(filepath.Join(t.TempDir(), "elsewhere"), "parquet")
	if err := CheckTarget(&spec, false, "COPY"); !errors.Is(err, catalog.ErrLocationNotAllowed) {
		t.Fatalf("outside the allowed locations: %v", err)
	}
	spec.Dir = filepath.Join(dir, "sub", "..", "..", "escape")
	if err := CheckTarget(&spec, false, "COPY"); !errors.Is(err, catalog.ErrLocationNotAllowed) {
		t.Fatalf("traversal out of the allowed locations: %v", err)
	}
	// A link inside the allowed directory leading out of it.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	spec.Dir = filepath.Join(dir, "link", "new", "deeper")
	if err := CheckTarget(&spec, false, "COPY"); !errors.Is(err, catalog.ErrLocationNotAllowed) {
		t.Fatalf("link out of the allowed locations: %v", err)
	}
	spec.Dir = filepath.Join(dir, "inside", "new")
	if err := CheckTarget(&spec, false, "COPY"); err != nil {
		t.Fatalf("new directory inside the allowed locations: %v", err)
	}
}

func TestWriteOverwriteReplacesContents(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := writeTestSource(t, mem)
	defer src.release()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "old=1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old=1", "x.parquet"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := writeTestSpec(dir, "parquet")
	spec.Overwrite = true
	if _, err := runWrite(t, src, spec, newTestTC(mem, 8192)); err != nil {
		t.Fatal(err)
	}
	for _, f := range filesUnder(t, dir) {
		if !strings.HasPrefix(f, "part-"+spec.WriteID) {
			t.Errorf("%s survived OVERWRITE", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "old=1")); !os.IsNotExist(err) {
		t.Errorf("old directory survived OVERWRITE")
	}
}

func TestWritePlanProtoRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	// The plan's input is a Parquet scan (a shippable leaf) of a table
	// written the same way.
	src := writeTestSource(t, mem)
	defer src.release()
	if _, err := runWrite(t, src, writeTestSpec(filepath.Join(dir, "src"), "parquet"), newTestTC(mem, 8192)); err != nil {
		t.Fatal(err)
	}
	pt, err := catalog.OpenParquet(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	scan := physical.NewParquetScan("t", pt, []int{0, 6}, nil, 2)
	spec := Spec{Dir: filepath.Join(dir, "out"), Format: "csv", Header: true, Delimiter: '|',
		Names: []string{"x", "y"}, PartitionBy: []int{1}, WriteID: NewID(), Overwrite: true}
	sink, err := NewFileSink(scan, spec)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := NewWriteCommit(physical.NewCoalescePartitions(sink), spec)
	if err != nil {
		t.Fatal(err)
	}
	got := shipPlan(t, commit)
	gc, ok := got.(*WriteCommit)
	if !ok {
		t.Fatalf("decoded %T", got)
	}
	if !reflect.DeepEqual(gc.Spec(), spec) {
		t.Fatalf("commit spec %+v, want %+v", gc.Spec(), spec)
	}
	gs := gc.Children()[0].Children()[0].(*FileSink)
	if !reflect.DeepEqual(gs.Spec(), spec) {
		t.Fatalf("sink spec %+v, want %+v", gs.Spec(), spec)
	}
	tc := newTestTC(mem, 8192)
	n, err := execCount(t, got, tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := CommitFiles(&spec, tc.Commit.Files()); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the decoded plan wrote no rows: the round trip proves nothing")
	}
	ct, err := catalog.OpenCSV(spec.Dir, catalog.CSVOptions{Header: true, Delimiter: '|'}, scan.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if rows := collectAll(t, physical.NewCSVScan("t", ct, []int{0, 1}, 1), physical.NewTaskContext()); int64(len(rows)) != n {
		t.Fatalf("read back %d rows, wrote %d", len(rows), n)
	}
}

func TestHiveValue(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "abc", "a/b": "a%2Fb", "../x": "..%2Fx", "c d": "c%20d", "x=y": "x%3Dy", "100%": "100%25",
		"": "", "NULL": "%4EULL", "2024-01-02 03:04:05": "2024-01-02%2003%3A04%3A05", "é": "%C3%A9",
	} {
		if got := hiveValue(in); got != want {
			t.Errorf("hiveValue(%q) = %q, want %q", in, got, want)
		}
	}
}
