package catalog

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// CSVOptions say how CSV files are laid out.
type CSVOptions struct {
	// Header: the first line of every file names the columns.
	Header bool
	// Delimiter separates fields; 0 means ','.
	Delimiter rune
}

// csvInferRows is how many rows schema inference looks at.
const csvInferRows = 1000

// CSVTable is a table backed by one CSV file or a directory of them. Empty
// fields read as NULL.
type CSVTable struct {
	path   string
	schema *arrow.Schema
	opts   CSVOptions
	// Files are the table's files, sorted by path.
	Files   []CSVFile
	rows    int64
	bytes   int64
	version string // Version, computed once when the table is opened
}

// CSVFile is one file of a CSVTable.
type CSVFile struct {
	Path    string
	Size    int64  // bytes on disk
	ModTime int64  // modification time, Unix nanoseconds
	ETag    string // an object's entity tag; "" for local files
}

// Info is the file's identity, for reading it (OpenStream).
func (f CSVFile) Info() FileInfo {
	return FileInfo(f)
}

// FileInfos are the identities of the table's files.
func (t *CSVTable) FileInfos() []FileInfo {
	out := make([]FileInfo, len(t.Files))
	for i, f := range t.Files {
		out[i] = f.Info()
	}
	return out
}

// Schema implements Table.
func (t *CSVTable) Schema() *arrow.Schema { return t.schema }

// Statistics implements Table: file bytes, and rows estimated from the
// average row width of a sample of the first file (-1 if it is empty).
func (t *CSVTable) Statistics() Statistics {
	return Statistics{NumRows: t.rows, TotalBytes: t.bytes}
}

// Options are the layout options the table was opened with, with the
// delimiter defaulted.
func (t *CSVTable) Options() CSVOptions { return t.opts }

// Path is the file or directory the table was opened from.
func (t *CSVTable) Path() string { return t.path }

// OpenCSV opens a CSV file or every *.csv file under a directory. With a nil
// schema, column types are inferred from the first rows of the first file
// (int64, float64, date32 for YYYY-MM-DD, bool for true/false, else utf8)
// and names come from the header, or are column_1, column_2… without one.
func OpenCSV(path string, opts CSVOptions, schema *arrow.Schema) (*CSVTable, error) {
	files, err := listFiles(path, ".csv")
	if err != nil {
		return nil, err
	}
	return OpenCSVFiles(path, files, opts, schema)
}

// OpenCSVFiles opens the CSV table at path made of the given files (as
// listed by the process that planned the query; see OpenParquetFiles).
func OpenCSVFiles(path string, files []FileInfo, opts CSVOptions, schema *arrow.Schema) (*CSVTable, error) {
	if opts.Delimiter == 0 {
		opts.Delimiter = ','
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.csv files under %s", path)
	}
	t := &CSVTable{path: path, opts: opts}
	for _, f := range files {
		t.Files = append(t.Files, CSVFile(f))
		t.bytes += f.Size
	}
	first := files[0].Path
	sample, err := sampleCSV(files[0], opts)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		schema, err = inferCSVSchema(sample)
		if err != nil {
			return nil, fmt.Errorf("csv %s: %w", first, err)
		}
	} else if sample.width > 0 && sample.width != schema.NumFields() {
		return nil, fmt.Errorf("csv %s has %d columns, the schema %d", first, sample.width, schema.NumFields())
	}
	t.schema = schema
	t.rows = -1
	if len(sample.rows) > 0 && sample.bytes > 0 {
		if sample.complete && len(files) == 1 {
			t.rows = int64(len(sample.rows))
		} else {
			t.rows = int64(float64(t.bytes) * float64(len(sample.rows)) / float64(sample.bytes))
		}
	}
	t.version = filesVersion(t.Files, func(f CSVFile) FileInfo { return f.Info() })
	return t, nil
}

// csvSample is the start of a CSV file.
type csvSample struct {
	header   []string
	rows     [][]string
	width    int   // fields per row, 0 if the file is empty
	bytes    int64 // bytes the sampled rows span
	complete bool  // the sample is the whole file
}

func sampleCSV(fi FileInfo, opts CSVOptions) (*csvSample, error) {
	path := fi.Path
	f, err := OpenStream(context.Background(), fi)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(NewCSVRecordLimiter(f))
	r.Comma = opts.Delimiter
	s := &csvSample{}
	var headerBytes int64
	if opts.Header {
		s.header, err = r.Read()
		if errors.Is(err, io.EOF) {
			s.complete = true
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("csv %s: header: %w", path, err)
		}
		s.width = len(s.header)
		headerBytes = r.InputOffset()
	}
	for len(s.rows) < csvInferRows {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			s.complete = true
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv %s: %w", path, err)
		}
		s.rows = append(s.rows, rec)
		s.width = len(rec)
	}
	s.bytes = r.InputOffset() - headerBytes
	return s, nil
}

// csvDelimiters are the delimiters DetectCSVDelimiter tries, preferred in
// this order.
var csvDelimiters = []rune{',', '|', ';', '\t'}

// DetectCSVDelimiter guesses the delimiter of the CSV files at path (the
// first file is looked at): the first of , | ; and tab that splits every
// sampled line into the same number of fields, more than one. A file no
// candidate splits that way is read with ','.
func DetectCSVDelimiter(path string) (rune, error) {
	files, err := listFiles(path, ".csv")
	if err != nil {
		return 0, err
	}
	for _, d := range csvDelimiters {
		s, err := sampleCSV(files[0], CSVOptions{Delimiter: d})
		if err != nil || s.width < 2 {
			continue // ragged lines, or one field: not this delimiter
		}
		return d, nil
	}
	return ',', nil
}

// DetectCSVHeader guesses whether the CSV files at path (a file, directory
// or glob; the first file is looked at) start with a header line, as
// DuckDB's read_csv does: the first line is a header when some column
// whose later values have a type other than text (numbers, dates,
// booleans) would be text with the first line's value; it is data when
// every such column keeps its type.
// A file whose columns are all text is taken to have a header.
func DetectCSVHeader(path string, opts CSVOptions) (bool, error) {
	if opts.Delimiter == 0 {
		opts.Delimiter = ','
	}
	files, err := listFiles(path, ".csv")
	if err != nil {
		return false, err
	}
	opts.Header = false
	s, err := sampleCSV(files[0], opts)
	if err != nil {
		return false, err
	}
	if len(s.rows) < 2 {
		return len(s.rows) == 1 && inferCSVSchemaTypesText(s.rows), nil
	}
	rest := s.rows[1:]
	typed := false
	for c := 0; c < s.width; c++ {
		t := inferCSVColumn(rest, c)
		if t.ID() == typeUtf8.ID() {
			continue
		}
		typed = true
		// The first line is data if the column keeps a type other
		// than text with it (an integer among floats is still a number).
		if inferCSVColumn(s.rows, c).ID() == typeUtf8.ID() {
			return true, nil
		}
	}
	return !typed, nil
}

// inferCSVSchemaTypesText reports whether every value of a one-line file is
// text (no number, date or boolean): such a line is a header.
func inferCSVSchemaTypesText(rows [][]string) bool {
	for c := range rows[0] {
		if rows[0][c] == "" || inferCSVColumn(rows, c).ID() != typeUtf8.ID() {
			return false
		}
	}
	return true
}

func inferCSVSchema(s *csvSample) (*arrow.Schema, error) {
	if s.width == 0 {
		return nil, fmt.Errorf("cannot infer a schema from an empty file")
	}
	fields := make([]arrow.Field, s.width)
	for c := range fields {
		name := fmt.Sprintf("column_%d", c+1)
		if s.header != nil && strings.TrimSpace(s.header[c]) != "" {
			name = strings.TrimSpace(s.header[c])
		}
		fields[c] = arrow.Field{Name: name, Type: inferCSVColumn(s.rows, c), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// inferCSVColumn picks the narrowest of int64, float64, date32, timestamp,
// bool that every non-empty value of column c parses as, else utf8.
func inferCSVColumn(rows [][]string, c int) arrow.DataType {
	isInt, isFloat, isDate, isTimestamp, isBool, seen := true, true, true, true, true, false
	for _, row := range rows {
		v := row[c]
		if v == "" {
			continue
		}
		seen = true
		if isInt {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				isInt = false
			}
		}
		if isFloat && !looksNumeric(v) {
			isFloat = false
		}
		_, err := time.Parse("2006-01-02", v)
		date := err == nil && len(v) == 10
		isDate = isDate && date
		// A date beside timestamps is midnight.
		isTimestamp = isTimestamp && (date || looksTimestamp(v))
		if isBool {
			switch v {
			case "true", "false", "TRUE", "FALSE", "True", "False":
			default:
				isBool = false
			}
		}
	}
	switch {
	case !seen:
		return typeUtf8
	case isInt:
		return typeInt64
	case isFloat:
		return typeFloat64
	case isDate:
		return typeDate32
	case isTimestamp:
		return typeTimestamp
	case isBool:
		return typeBool
	}
	return typeUtf8
}

// timestampLayouts are the ISO timestamps inference takes for TIMESTAMP
// columns (a fraction of a second is optional in each): a subset of what
// the scan's parser accepts (plan.ParseTimestamp), which reads the column.
var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04", "2006-01-02T15:04",
}

// looksTimestamp reports whether v is an ISO date and time, in UTC when it
// says a zone (a trailing Z or +00:00, as exports write them): a value with
// another offset is not a TIMESTAMP (without time zone).
func looksTimestamp(v string) bool {
	for _, z := range []string{"Z", "+00:00", "+00"} {
		if strings.HasSuffix(v, z) {
			v = v[:len(v)-len(z)]
			break
		}
	}
	for _, l := range timestampLayouts {
		if _, err := time.Parse(l, v); err == nil {
			return true
		}
	}
	return false
}

// looksNumeric reports whether v is a decimal float literal; it rejects the
// words (inf, nan) and hex forms strconv.ParseFloat would also accept.
func looksNumeric(v string) bool {
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; {
		case ch >= '0' && ch <= '9', ch == '.', ch == '-', ch == '+', ch == 'e', ch == 'E':
		default:
			return false
		}
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

var _ Table = (*CSVTable)(nil)
