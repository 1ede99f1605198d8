package tpch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readTable reads every Parquet file of a generated table.
func readTable(t *testing.T, mem memory.Allocator, dir, table string) []arrow.Table {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, table, "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files for %s: %v", table, err)
	}
	var out []arrow.Table
	for _, f := range files {
		pf, err := file.OpenParquetFile(f, false)
		if err != nil {
			t.Fatal(err)
		}
		md := pf.MetaData()
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for c := 0; c < md.NumColumns(); c++ {
				cc, err := md.RowGroup(rg).ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := cc.StatsSet(); err != nil || !ok {
					t.Errorf("%s row group %d column %d has no statistics", f, rg, c)
				}
				if got := cc.Compression().String(); got != "SNAPPY" {
					t.Errorf("%s column %d compression %s, want SNAPPY", f, c, got)
				}
			}
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		pf.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tbl)
	}
	return out
}

func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) || fa.Nullable != fb.Nullable {
			return false
		}
	}
	return true
}

// TestGenerateNationRegion runs dbgen for the two fixed-size tables only
// (the others take far too long for a unit test) and checks them against
// the official data.
func TestGenerateNationRegion(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	out := filepath.Join(t.TempDir(), "sf1")
	var labels []string
	err := generate(context.Background(), 1, out, []string{"nation", "region"}, func(label string, done, total int64) {
		if done == total {
			labels = append(labels, label)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(labels, ",") != "nation,region" {
		t.Errorf("finished steps %v, want nation,region", labels)
	}
	if _, err := os.Stat(filepath.Join(out, CompleteMarker)); err != nil {
		t.Errorf("completion marker: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*partial*")); len(left) > 0 {
		t.Errorf("temporary directories left behind: %v", left)
	}

	tests := []struct {
		table   string
		rows    int64
		key0    string // name of key 0
		key4    string // name of key 4
		comment string // comment of key 0, as in the official nation.tbl/region.tbl
	}{
		{"nation", 25, "ALGERIA", "EGYPT", " haggle. carefully final deposits detect slyly agai"},
		{"region", 5, "AFRICA", "MIDDLE EAST", "lar deposits. blithely final packages cajole. regular waters are final requests. regular accounts are according to "},
	}
	for _, tc := range tests {
		t.Run(tc.table, func(t *testing.T) {
			tbls := readTable(t, mem, out, tc.table)
			defer func() {
				for _, tbl := range tbls {
					tbl.Release()
				}
			}()
			if len(tbls) != 1 {
				t.Fatalf("%d files, want 1", len(tbls))
			}
			tbl := tbls[0]
			if !sameColumns(tbl.Schema(), Schema(tc.table)) {
				t.Fatalf("schema\n%s\nwant\n%s", tbl.Schema(), Schema(tc.table))
			}
			if tbl.NumRows() != tc.rows {
				t.Fatalf("rows %d, want %d", tbl.NumRows(), tc.rows)
			}
			keys := tbl.Column(0).Data().Chunk(0).(*array.Int64)
			names := tbl.Column(1).Data().Chunk(0).(*array.String)
			comments := tbl.Column(int(tbl.NumCols()) - 1).Data().Chunk(0).(*array.String)
			for i := 0; i < keys.Len(); i++ {
				if keys.Value(i) != int64(i) {
					t.Fatalf("key at row %d is %d", i, keys.Value(i))
				}
			}
			if names.Value(0) != tc.key0 || names.Value(4) != tc.key4 {
				t.Errorf("names %q, %q; want %q, %q", names.Value(0), names.Value(4), tc.key0, tc.key4)
			}
			if comments.Value(0) != tc.comment {
				t.Errorf("comment %q, want %q", comments.Value(0), tc.comment)
			}
		})
	}
	// n_regionkey of EGYPT (key 4) is MIDDLE EAST (4); of ALGERIA, AFRICA (0).
	tbls := readTable(t, mem, out, "nation")
	reg := tbls[0].Column(2).Data().Chunk(0).(*array.Int64)
	if reg.Value(0) != 0 || reg.Value(4) != 4 {
		t.Errorf("n_regionkey %d, %d; want 0, 4", reg.Value(0), reg.Value(4))
	}
	tbls[0].Release()
	mem.AssertSize(t, 0)
}

func TestGenerateCancelled(t *testing.T) {
	out := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once dbgen is running: nation is written, region is not.
	err := generate(ctx, 1, out, []string{"nation", "region"}, func(label string, done, total int64) {
		if label == "region" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("an interrupted run left %v behind", entries)
	}
}

func TestGenerateRefuses(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		sf   int
		out  string
		want string
	}{
		{"zero scale", context.Background(), 0, filepath.Join(dir, "a"), "scale factor"},
		{"non-empty directory", context.Background(), 1, full, "not empty"},
		{"cancelled before start", cancelled, 1, filepath.Join(dir, "b"), "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Generate(tc.ctx, tc.sf, tc.out, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory has %d entries, want only the pre-existing one", len(entries))
	}
}

func TestSchema(t *testing.T) {
	tests := []struct {
		table string
		col   string
		typ   arrow.DataType
	}{
		{"lineitem", "l_orderkey", arrow.PrimitiveTypes.Int64},
		{"lineitem", "l_linenumber", arrow.PrimitiveTypes.Int64},
		{"lineitem", "l_quantity", &arrow.Decimal128Type{Precision: 15, Scale: 2}},
		{"lineitem", "l_discount", &arrow.Decimal128Type{Precision: 15, Scale: 2}},
		{"lineitem", "l_shipdate", arrow.FixedWidthTypes.Date32},
		{"lineitem", "l_returnflag", arrow.BinaryTypes.String},
		{"orders", "o_orderdate", arrow.FixedWidthTypes.Date32},
		{"orders", "o_totalprice", &arrow.Decimal128Type{Precision: 15, Scale: 2}},
		{"partsupp", "ps_availqty", arrow.PrimitiveTypes.Int64},
		{"customer", "c_acctbal", &arrow.Decimal128Type{Precision: 15, Scale: 2}},
		{"part", "p_size", arrow.PrimitiveTypes.Int64},
		{"region", "r_name", arrow.BinaryTypes.String},
	}
	for _, tc := range tests {
		s := Schema(tc.table)
		idx := s.FieldIndices(tc.col)
		if len(idx) != 1 {
			t.Errorf("%s.%s missing", tc.table, tc.col)
			continue
		}
		if f := s.Field(idx[0]); !arrow.TypeEqual(f.Type, tc.typ) || f.Nullable {
			t.Errorf("%s.%s is %s nullable=%v, want %s not null", tc.table, tc.col, f.Type, f.Nullable, tc.typ)
		}
	}
	wantCols := map[string]int{"nation": 4, "region": 3, "part": 9, "supplier": 7, "partsupp": 5, "customer": 8, "orders": 9, "lineitem": 16}
	for _, name := range TableNames {
		if got := Schema(name).NumFields(); got != wantCols[name] {
			t.Errorf("%s has %d columns, want %d", name, got, wantCols[name])
		}
	}
	if len(TableNames) != 8 || Schema("nope") != nil {
		t.Errorf("TableNames %v, Schema(nope) %v", TableNames, Schema("nope"))
	}
}

func TestParseDate(t *testing.T) {
	tests := []struct {
		in      string
		want    arrow.Date32
		wantErr bool
	}{
		{"1970-01-01", 0, false},
		{"1992-01-01", 8035, false},
		{"1996-02-29", 9555, false},
		{"1998-12-31", 10591, false},
		{"1969-12-31", -1, false},
		{"1998-13-01", 0, true},
		{"98-01-01", 0, true},
		{"1998/01/01", 0, true},
	}
	for _, tc := range tests {
		got, err := parseDate(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseDate(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestEnsureCached: a current data set is kept, an older format's is
// replaced, and a directory that is not a data set is refused untouched.
func TestEnsureCached(t *testing.T) {
	ctx := context.Background()
	steps := []string{"nation", "region"}
	dir := filepath.Join(t.TempDir(), "sf1")
	var notices []string
	notice := func(s string) { notices = append(notices, s) }

	gen, err := ensureCached(ctx, 1, dir, steps, notice, nil)
	if err != nil || !gen {
		t.Fatalf("first call: generated=%v err=%v, want a generation", gen, err)
	}
	gen, err = ensureCached(ctx, 1, dir, steps, notice, nil)
	if err != nil || gen {
		t.Fatalf("second call: generated=%v err=%v, want the cache kept", gen, err)
	}

	// A cache of format 1 (its marker had no format line) is regenerated.
	marker := filepath.Join(dir, CompleteMarker)
	if err := os.WriteFile(marker, []byte("scale_factor=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gen, err = ensureCached(ctx, 1, dir, steps, notice, nil)
	if err != nil || !gen {
		t.Fatalf("outdated cache: generated=%v err=%v, want a regeneration", gen, err)
	}
	if got, _ := os.ReadFile(marker); string(got) != markerText(1) {
		t.Errorf("marker after regeneration = %q, want %q", got, markerText(1))
	}
	if len(notices) != 2 || !strings.Contains(notices[1], "older sluice") {
		t.Errorf("notices = %q, want a generation and an 'older sluice' regeneration", notices)
	}

	// Not ours: a directory with other files and no marker.
	other := t.TempDir()
	keep := filepath.Join(other, "mine.txt")
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureCached(ctx, 1, other, steps, nil, nil); err == nil {
		t.Error("a non-empty directory without a marker was accepted")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a file in a foreign directory was removed: %v", err)
	}
}
