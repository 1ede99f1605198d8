package catalog

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenCSVRefusesSpecialFiles checks that LOCATION must be a regular file
// or a directory of them: /dev/zero never ends and a FIFO blocks the opener
// until someone writes, so both must be refused at once.
func TestOpenCSVRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	withFIFO := filepath.Join(dir, "tables")
	if err := os.Mkdir(withFIFO, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withFIFO, "a.csv"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(withFIFO, "b.csv"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{"/dev/zero": "character device", fifo: "named pipe", withFIFO: "named pipe"} {
		_, err := OpenCSV(path, CSVOptions{}, nil)
		if err == nil || !strings.Contains(err.Error(), "is not a regular file (it is a "+kind+")") {
			t.Errorf("%s: got %v", path, err)
		}
		if path == withFIFO {
			continue // it holds no .parquet files
		}
		if _, err := OpenParquet(path); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
			t.Errorf("parquet %s: got %v", path, err)
		}
	}
	if _, err := OpenRegular(fifo); err == nil {
		t.Error("OpenRegular opened a FIFO")
	}
}

// endless yields the same byte forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestCSVRecordLimiter checks the per-record cap: an endless line fails
// naming its line, an endless quoted field (an unterminated quote spanning
// lines) fails too, and records below the cap pass through unchanged.
func TestCSVRecordLimiter(t *testing.T) {
	for _, c := range []struct {
		in   io.Reader
		line string
	}{
		{io.MultiReader(strings.NewReader("a,b\n1,2\n"), endless('x')), "line 3"},
		{io.MultiReader(strings.NewReader("a\n\"open quote\n"), endless('\n')), "line 2"},
	} {
		_, err := io.Copy(io.Discard, NewCSVRecordLimiter(c.in))
		if err == nil || !strings.Contains(err.Error(), "the record starting at "+c.line+" is longer than 67108864 bytes") {
			t.Errorf("got %v, want a record too long at %s", err, c.line)
		}
	}
	in := "a,b\n\"x\"\"\ny\",2\n" + strings.Repeat("z", 1<<20) + "\n"
	got, err := io.ReadAll(NewCSVRecordLimiter(strings.NewReader(in)))
	if err != nil || string(got) != in {
		t.Errorf("records under the cap: err %v, %d of %d bytes", err, len(got), len(in))
	}
	// Many short records add up to more than the cap without failing.
	many := io.LimitReader(endless('\n'), 2*MaxCSVRecordBytes)
	if n, err := io.Copy(io.Discard, NewCSVRecordLimiter(many)); err != nil || n != 2*MaxCSVRecordBytes {
		t.Errorf("short records: %d bytes, %v", n, err)
	}
}
