package repl

import (
	"io"
	"strings"
	"testing"
)

// TestPasteFilter: pasted text loses its marks and keeps its tabs and line
// breaks (as characters readline neither completes at nor submits at),
// whatever the reads split; typed text passes unchanged.
func TestPasteFilter(t *testing.T) {
	typed := "SELECT 1;\r\x1b[A\t"
	pasted := "SELECT\ta,\r\n  'x\ty'\nFROM t;"
	in := typed + pasteStart + pasted + pasteEnd + "\r"
	for _, chunk := range []int{1, 2, 3, 5, 7, 4096} {
		f := newPasteFilter(io.NopCloser(chunkReader(in, chunk)))
		got, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(got)
		if !strings.HasPrefix(s, typed) || !strings.HasSuffix(s, "\r") {
			t.Fatalf("chunk %d: typed text changed: %q", chunk, s)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(s, typed), "\r")
		if strings.ContainsAny(body, "\t\r\n\x1b") {
			t.Errorf("chunk %d: pasted text still holds raw tabs, breaks or marks: %q", chunk, body)
		}
		if want := "SELECT\ta,\n  'x\ty'\nFROM t;"; unpaste(body) != want {
			t.Errorf("chunk %d: unpasted %q, want %q", chunk, unpaste(body), want)
		}
	}
}

// chunkReader reads s at most n bytes at a time.
func chunkReader(s string, n int) io.Reader {
	return &chunked{s: s, n: n}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}
