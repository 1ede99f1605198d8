package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/session"
)

// TestParquetUnsupportedTypesSameInEveryMode: a Parquet table with list,
// struct, map, binary and time columns registers; its other columns read
// (lists too, as arrays); a query reading one of the others is refused
// with the same error, naming the column and its type, in process and in
// both cluster modes.
func TestParquetUnsupportedTypesSameInEveryMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "types.parquet")
	writeTypesFile(t, path)
	register := fmt.Sprintf("CREATE EXTERNAL TABLE typed STORED AS PARQUET LOCATION '%s'", path)
	cases := []struct{ sql, want string }{
		{"SELECT * FROM typed", `table typed: column "s" has type struct<a: int32 nullable>, which sluice does not support (select the table's other columns)`},
		{"SELECT id, l, cardinality(l), l[1] FROM typed WHERE l[1] = id", ""}, // arrays of any element type read
		{"SELECT s FROM typed", `table typed: column "s" has type struct<a: int32 nullable>, which sluice does not support (select the table's other columns)`},
		{"SELECT id FROM typed WHERE m IS NULL", `table typed: column "m" has type map<utf8, int32, items_nullable>, which sluice does not support (select the table's other columns)`},
		{"SELECT b FROM typed", `table typed: column "b" has type binary, which sluice does not support (select the table's other columns)`},
		{"SELECT t FROM typed", `table typed: column "t" has type time64[us], which sluice does not support (select the table's other columns)`},
		{"SELECT sum(id), count(*) FROM typed", ""},
	}
	run := func(t *testing.T, s *session.Session) {
		if err := drain(ctx, s, register); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			err := drain(ctx, s, c.sql)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s: %v", c.sql, err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("%s: error %v, want %q", c.sql, err, c.want)
			}
		}
		if err := drain(ctx, s, "DROP TABLE typed"); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("in-process", func(t *testing.T) { run(t, session.New(catalog.New())) })
	s := startCluster(t, 2, cluster.PolicyPush)
	for _, mode := range []string{"blocking", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			if err := s.Settings.Set("execution.mode", mode); err != nil {
				t.Fatal(err)
			}
			run(t, s)
		})
	}
}

// writeTypesFile writes three rows of an int64 key and a column of each
// type sluice does not read.
func writeTypesFile(t *testing.T, path string) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).Append(int32(i))
		sb := b.Field(2).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		mb := b.Field(3).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int32Builder).Append(int32(i))
		b.Field(4).(*array.BinaryBuilder).Append([]byte{byte(i)})
		b.Field(5).(*array.Time64Builder).Append(arrow.Time64(i * 1000))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
