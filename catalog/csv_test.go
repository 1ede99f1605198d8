package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCSVInference(t *testing.T) {
	tests := []struct {
		name    string
		content string
		opts    CSVOptions
		want    string // "name:type" per column
	}{
		{
			name:    "header",
			content: "a,b,c,d,e,f\n1,1.5,2024-01-02,true,x,\n2,2,2024-12-31,FALSE,7,\n,3e2,,,,\n",
			opts:    CSVOptions{Header: true},
			want:    "a:int64 b:float64 c:date32 d:bool e:utf8 f:utf8",
		},
		{
			name:    "no header, pipe",
			content: "1|x|2.5\n-3|y|nan\n",
			opts:    CSVOptions{Delimiter: '|'},
			want:    "column_1:int64 column_2:utf8 column_3:utf8",
		},
		{
			name:    "ints beyond int64 are floats, bad dates are strings",
			content: "99999999999999999999,2024-02-30,1\n1,2024-02-01,0\n",
			want:    "column_1:float64 column_2:utf8 column_3:int64",
		},
		{
			// ISO timestamps as exports write them (T or a space, a
			// fraction, a UTC designator; a bare date beside them is
			// midnight); another offset is not a timestamp without zone.
			name: "timestamps",
			content: "a,b,c,d\n2024-01-01T10:00:00Z,2024-01-02 11:30:00.25,2024-01-01 10:00,2024-01-01T10:00:00+02:00\n" +
				"2024-03-01,2024-01-03 00:00:00+00:00,2024-13-01 10:00,2024-01-01T10:00:00Z\n",
			opts: CSVOptions{Header: true},
			want: "a:timestamp[us] b:timestamp[us] c:utf8 d:utf8",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.csv")
			writeFile(t, path, tt.content)
			tbl, err := OpenCSV(path, tt.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range tbl.Schema().Fields() {
				got = append(got, f.Name+":"+f.Type.String())
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("schema %s, want %s", strings.Join(got, " "), tt.want)
			}
			if st := tbl.Statistics(); st.TotalBytes != int64(len(tt.content)) || st.NumRows <= 0 {
				t.Fatalf("statistics %+v", st)
			}
		})
	}
}

func TestOpenCSVDirectoryAndErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.csv"), "x\n3\n")
	writeFile(t, filepath.Join(dir, "a.csv"), "x\n1\n2\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "ignored")
	tbl, err := OpenCSV(dir, CSVOptions{Header: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Files) != 2 || filepath.Base(tbl.Files[0].Path) != "a.csv" {
		t.Fatalf("files %+v", tbl.Files)
	}
	if tbl.Options().Delimiter != ',' {
		t.Fatalf("delimiter not defaulted")
	}

	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	tbl, err = OpenCSV(dir, CSVOptions{Header: true}, schema)
	if err != nil {
		t.Fatal(err)
	}
	if !tbl.Schema().Equal(schema) {
		t.Fatalf("given schema not kept: %s", tbl.Schema())
	}

	if _, err := OpenCSV(filepath.Join(dir, "missing.csv"), CSVOptions{}, nil); err == nil {
		t.Errorf("missing file: no error")
	}
	if _, err := OpenCSV(t.TempDir(), CSVOptions{}, nil); err == nil {
		t.Errorf("empty directory: no error")
	}
	two := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}, {Name: "y", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if _, err := OpenCSV(dir, CSVOptions{Header: true}, two); err == nil {
		t.Errorf("schema with the wrong column count: no error")
	}
	empty := filepath.Join(t.TempDir(), "e.csv")
	writeFile(t, empty, "")
	if _, err := OpenCSV(empty, CSVOptions{}, nil); err == nil {
		t.Errorf("inferring from an empty file: no error")
	}
}
