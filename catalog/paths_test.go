package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenPathGlobAndFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.csv", "x,y\n1,a\n")
	write("b.csv", "x,y\n2,b\n3,c\n")
	write("notes.txt", "hello\n")
	if err := os.Mkdir(filepath.Join(dir, "sub.csv"), 0o755); err != nil {
		t.Fatal(err)
	}

	tab, err := OpenPath(filepath.Join(dir, "*.csv"), "", CSVOptions{}, false)
	if err != nil {
		t.Fatal(err)
	}
	ct := tab.(*CSVTable)
	if len(ct.Files) != 2 || ct.Schema().Field(0).Name != "x" {
		t.Errorf("glob: files %v, schema %s; want a.csv and b.csv (the directory skipped) with header x, y", ct.Files, ct.Schema())
	}

	_, err = OpenPath(filepath.Join(dir, "*.parquet"), "", CSVOptions{}, false)
	if err == nil || !strings.Contains(err.Error(), "no files match") {
		t.Errorf("glob matching nothing: got %v", err)
	}
	_, err = OpenPath(filepath.Join(dir, "notes.txt"), "", CSVOptions{}, false)
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "read_csv") {
		t.Errorf("unknown extension: got %v, want ErrUnknownFormat with a hint", err)
	}
	if _, err := OpenPath(filepath.Join(dir, "notes.txt"), FormatCSV, CSVOptions{}, true); err != nil {
		t.Errorf("notes.txt read as CSV when asked: %v", err)
	}
	_, err = OpenPath(filepath.Join(dir, "gone.csv"), "", CSVOptions{}, false)
	if err == nil || !strings.Contains(err.Error(), "gone.csv does not exist") {
		t.Errorf("missing file: got %v", err)
	}
	if f, err := FormatOf(dir); err != nil || f != FormatCSV {
		t.Errorf("FormatOf(directory of CSV files) = %q, %v", f, err)
	}
}

func TestOpenPathRestricted(t *testing.T) {
	root := t.TempDir()
	allowed, outside := filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "t.csv"), []byte("a\n1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLocations([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	RestrictLocations(l)
	t.Cleanup(func() { RestrictLocations(nil) })
	if _, err := OpenPath(filepath.Join(allowed, "*.csv"), "", CSVOptions{}, false); err != nil {
		t.Errorf("glob inside the allowed directory: %v", err)
	}
	for _, p := range []string{
		filepath.Join(outside, "t.csv"),
		filepath.Join(outside, "*.csv"),
		filepath.Join(outside, "missing.csv"),
		filepath.Join(allowed, "..", "outside", "*.csv"),
		filepath.Join(root, "*", "t.csv"),
	} {
		if _, err := OpenPath(p, "", CSVOptions{}, false); !errors.Is(err, ErrLocationNotAllowed) {
			t.Errorf("%s: got %v, want a location-not-allowed error", p, err)
		}
	}
}

func TestDetectCSVHeader(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		body string
		want bool
	}{
		{"a,b\n1,2\n", true},
		{"1,2\n3,4\n", false},
		{"1,x\n2,y\n", false},
		{"id,name\n1,x\n", true},
		{"name,city\nbob,paris\n", true}, // all text: taken as a header
		{"1.5,2\n3,4\n", false},
		{"3,4.5\n1,2\n", false}, // an integer in a float column is data
		{"a,b\n", true},
		{"1,2\n", false},
	} {
		p := filepath.Join(dir, "t.csv")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := DetectCSVHeader(p, CSVOptions{})
		if err != nil || got != c.want {
			t.Errorf("%q: header %v, %v; want %v", c.body, got, err, c.want)
		}
	}
}

func TestTableNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"data/trips.parquet":       "trips",
		"/x/Trips 2024.csv":        "trips_2024",
		"2024-01.parquet":          "_2024_01",
		"dir/lineitem.tbl.parquet": "lineitem",
		".parquet":                 "_parquet",
		"data/lineitem/*.parquet":  "lineitem",
		"/d/part-[0-9].csv":        "d",
	} {
		if got := TableNameFor(in); got != want {
			t.Errorf("TableNameFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDetectCSVDelimiter(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]rune{
		"a,b\n1,2\n":       ',',
		"a|b\n1|2\n":       '|',
		"a;b\n1;2,5\n":     ';',
		"a\tb\n1\t2\n":     '\t',
		"a|b,c\n1|2,3\n":   ',',
		"single\nvalue\n":  ',',
		"a|b\n1|2|3\n4\n":  ',',
		"a,b|c\n1,2|3,4\n": '|',
	} {
		p := filepath.Join(dir, "t.csv")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := DetectCSVDelimiter(p); err != nil || got != want {
			t.Errorf("%q: delimiter %q, %v; want %q", body, got, err, want)
		}
	}
}
