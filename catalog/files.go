package catalog

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// checkRegular refuses anything but a regular file (after symlinks): a
// device such as /dev/zero never ends, and opening a FIFO blocks until
// some other process writes to it, which would hang the scheduler or an
// executor for every user of the cluster.
//
// It also refuses a file outside the process's allowed locations
// (RestrictLocations): every table file is checked here.
func checkRegular(path string, st os.FileInfo) error {
	if err := checkAllowed(path); err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (it is a %s); a table's LOCATION must name a regular file or a directory of them", path, fileKind(st.Mode()))
	}
	return nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// CheckRegularFile checks that path is a regular file (see checkRegular).
func CheckRegularFile(path string) error {
	if err := checkAllowed(path); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	return checkRegular(path, st)
}

// OpenRegular opens a table file for reading after checking that it is a
// regular file (see checkRegular); scans use it because a table's files can
// change after CREATE EXTERNAL TABLE checked them.
func OpenRegular(path string) (*os.File, error) {
	if err := CheckRegularFile(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

// MaxCSVRecordBytes is the longest CSV record (one line, or several when a
// quoted field holds line breaks) a CSV table may hold: the CSV parser
// keeps a whole record in memory, so a file of one endless line, or an
// unterminated quote, must fail instead of exhausting memory.
const MaxCSVRecordBytes = 64 << 20

// CSVRecordLimiter passes a CSV file's bytes through and fails the read
// once one record exceeds MaxCSVRecordBytes. Records end at line breaks
// outside double quotes; a doubled quote inside a quoted field toggles
// twice and so keeps the state, as RFC 4180 escaping needs.
type CSVRecordLimiter struct {
	r       *bufio.Reader
	limit   int64
	line    int64 // 1-based line the current record starts on
	cur     int64 // lines seen so far, 1-based
	n       int64 // bytes in the current record
	inQuote bool
}

// NewCSVRecordLimiter wraps r, a CSV file's content; callers name the file
// in errors.
func NewCSVRecordLimiter(r io.Reader) *CSVRecordLimiter {
	return &CSVRecordLimiter{r: bufio.NewReaderSize(r, 64<<10), limit: MaxCSVRecordBytes, line: 1, cur: 1}
}

// Read implements io.Reader.
func (l *CSVRecordLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i := 0; i < n; i++ {
		switch p[i] {
		case '"':
			l.inQuote = !l.inQuote
		case '\n':
			l.cur++
			if !l.inQuote {
				l.n, l.line = 0, l.cur
				continue
			}
		}
		l.n++
		if l.n > l.limit {
			return i, fmt.Errorf("the record starting at line %d is longer than %d bytes (the limit is %d MiB per record)", l.line, l.limit, l.limit>>20)
		}
	}
	return n, err
}
