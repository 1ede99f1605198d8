package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenParquetNamesAFileThatIsNotParquet: a CSV, an empty file, and a
// file that only starts like Parquet are each refused as not Parquet,
// not with whatever their last bytes make of a footer.
func TestOpenParquetNamesAFileThatIsNotParquet(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"csv.parquet":   "a,b\n1,2\n3,4\n5,6\n7,8\n",
		"empty.parquet": "",
		"head.parquet":  "PAR1 and then something that is not a footer",
		"tiny.parquet":  "PAR1PAR1",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenParquet(path)
		if !errors.Is(err, ErrNotParquet) {
			t.Errorf("%s: %v, want %v", name, err, ErrNotParquet)
		}
	}
}
