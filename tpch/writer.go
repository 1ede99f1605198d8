package tpch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// tableWriter accumulates the rows of one table in Arrow builders and hands
// every full row group to a parquetSink. Each row group is one record batch
// so that a reader can split a file between partitions at row-group borders.
type tableWriter struct {
	table     string
	b         *array.RecordBuilder
	groupRows int
	rows      int // rows currently in b
	fileIdx   int // index of the file the next row group goes to
	fileRows  int // rows already sent to file fileIdx
	sink      *parquetSink
}

func newTableWriter(table string, groupRows int, sink *parquetSink) *tableWriter {
	return &tableWriter{
		table:     table,
		b:         array.NewRecordBuilder(memory.DefaultAllocator, mustSchema(table)),
		groupRows: groupRows,
		sink:      sink,
	}
}

func (w *tableWriter) i64(i int) *array.Int64Builder { return w.b.Field(i).(*array.Int64Builder) }
func (w *tableWriter) str(i int) *array.StringBuilder {
	return w.b.Field(i).(*array.StringBuilder)
}
func (w *tableWriter) dec(i int) *array.Decimal128Builder {
	return w.b.Field(i).(*array.Decimal128Builder)
}
func (w *tableWriter) date(i int) *array.Date32Builder { return w.b.Field(i).(*array.Date32Builder) }

// rowDone must be called after the columns of one row were appended; it
// ships the row group once it is full.
func (w *tableWriter) rowDone(ctx context.Context) error {
	w.rows++
	if w.rows >= w.groupRows {
		return w.flush(ctx)
	}
	return nil
}

// flush sends the buffered rows, if any, as one row group.
func (w *tableWriter) flush(ctx context.Context) error {
	if w.rows == 0 {
		return nil
	}
	rec := w.b.NewRecordBatch()
	n := w.rows
	w.rows = 0
	if err := w.sink.send(ctx, sinkJob{table: w.table, fileIdx: w.fileIdx, rec: rec}); err != nil {
		return err
	}
	w.fileRows += n
	return nil
}

// nextFile makes the following rows go to a new file. Row groups never span
// files, so the buffered rows are flushed first.
func (w *tableWriter) nextFile(ctx context.Context) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	if w.fileRows > 0 {
		w.fileIdx++
		w.fileRows = 0
	}
	return nil
}

func (w *tableWriter) release() { w.b.Release() }

// sinkJob is one row group of one table, destined for file fileIdx.
type sinkJob struct {
	table   string
	fileIdx int
	rec     arrow.RecordBatch
}

// openFile is the Parquet file a table currently writes to.
type openFile struct {
	idx int
	f   *os.File
	buf *bufio.Writer
	fw  *pqarrow.FileWriter
}

// parquetSink encodes row groups into Parquet files on its own goroutine, so
// that encoding and compression overlap with data generation (which cannot
// be parallelised: dbgen keeps its state in globals). Files are named
// dir/<table>/part-<n>.parquet.
type parquetSink struct {
	dir     string
	jobs    chan sinkJob
	done    chan struct{}
	files   map[string]*openFile
	err     error // first error; read only after done is closed
	cancel  context.CancelFunc
	wprops  *parquet.WriterProperties
	arprops pqarrow.ArrowWriterProperties
}

// startSink starts the encoding goroutine. cancel is called when writing
// fails, so that the generator stops early. The caller must call close.
func startSink(dir string, cancel context.CancelFunc) *parquetSink {
	s := &parquetSink{
		dir:    dir,
		jobs:   make(chan sinkJob, 2),
		done:   make(chan struct{}),
		files:  map[string]*openFile{},
		cancel: cancel,
		wprops: parquet.NewWriterProperties(append(columnEncodings(),
			parquet.WithCompression(compress.Codecs.Snappy),
			parquet.WithStats(true),
			parquet.WithDictionaryDefault(true),
			// DECIMAL(15,2) fits an INT64: smaller files and a much cheaper
			// decode than big-endian fixed-length bytes.
			parquet.WithStoreDecimalAsInteger(true),
			// Each job is exactly one row group; never split it.
			parquet.WithMaxRowGroupLength(1<<30),
		)...),
		arprops: pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()),
	}
	go s.run()
	return s
}

func (s *parquetSink) send(ctx context.Context, j sinkJob) error {
	select {
	case s.jobs <- j:
		return nil
	case <-ctx.Done():
		j.rec.Release()
		return ctx.Err()
	}
}

func (s *parquetSink) run() {
	defer close(s.done)
	for j := range s.jobs {
		if s.err == nil {
			if err := s.write(j); err != nil {
				s.err = err
				s.cancel()
			}
		}
		j.rec.Release()
	}
	for _, of := range s.files {
		if err := of.close(); err != nil && s.err == nil {
			s.err = err
		}
	}
}

func (s *parquetSink) write(j sinkJob) error {
	of := s.files[j.table]
	if of != nil && of.idx != j.fileIdx {
		if err := of.close(); err != nil {
			return err
		}
		of = nil
	}
	if of == nil {
		var err error
		of, err = s.create(j.table, j.fileIdx)
		if err != nil {
			return err
		}
		s.files[j.table] = of
	}
	if err := of.fw.Write(j.rec); err != nil {
		return fmt.Errorf("write %s row group: %w", j.table, err)
	}
	return nil
}

func (s *parquetSink) create(table string, idx int) (*openFile, error) {
	tdir := filepath.Join(s.dir, table)
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return nil, fmt.Errorf("create table directory: %w", err)
	}
	path := filepath.Join(tdir, fmt.Sprintf("part-%d.parquet", idx))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create parquet file: %w", err)
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	fw, err := pqarrow.NewFileWriter(mustSchema(table), buf, s.wprops, s.arprops)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open parquet writer for %s: %w", path, err)
	}
	return &openFile{idx: idx, f: f, buf: buf, fw: fw}, nil
}

func (of *openFile) close() error {
	err := of.fw.Close()
	if ferr := of.buf.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := of.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", of.f.Name(), err)
	}
	return nil
}

// close waits for all queued row groups to be written and the files closed,
// and returns the first write error.
func (s *parquetSink) close() error {
	close(s.jobs)
	<-s.done
	return s.err
}

// Columns whose values are unique or nearly so within a row group (keys,
// prices, names, addresses, phones, comments) are written without a
// dictionary: it saves nothing on them, the writer gives up on it part way
// through a row group anyway (the dictionary page limit), and readers pay for
// decoding the dictionary and gathering through it. Measured on SF 1 with
// the 22 queries in process: 5.75 s with dictionaries on every column, 5.06 s
// with these written plain; DuckDB on the same files was unchanged.
//
// The integer and decimal ones among them (deltaColumns) are written
// DELTA_BINARY_PACKED, Parquet's encoding for integers: sorted keys take a
// few bits a value, random keys and prices about 20. Written PLAIN, their
// 8-byte values are mostly zero bytes, which snappy turns into a stream of
// tiny copies that decodes slowly: on the pipelined cluster that
// decompression was 27 % of the CPU of the 22 queries; delta encoded,
// decoding them took 12 % with arrow's decoder (less with the scan's own). The 22 queries twice on the pipelined cluster took
// 6.8 s before and 5.3–5.6 s after, DuckDB's 22 on the same files 2.27 s
// before and 1.49 s after; lineitem shrank from 197 to 151 MB. Every common
// Parquet reader (DuckDB, Spark, Arrow) reads the encoding.
var deltaColumns = []string{
	"p_partkey", "p_retailprice",
	"s_suppkey",
	"ps_partkey", "ps_suppkey", "ps_supplycost",
	"c_custkey", "c_acctbal",
	"o_orderkey", "o_custkey", "o_totalprice",
	"l_orderkey", "l_partkey", "l_suppkey", "l_extendedprice",
}

var plainColumns = []string{
	"p_name", "p_comment",
	"s_name", "s_address", "s_phone", "s_comment",
	"ps_comment",
	"c_name", "c_address", "c_phone", "c_comment",
	"o_comment",
	"l_comment",
}

// columnEncodings lists the writer properties of deltaColumns and
// plainColumns; every other column is dictionary encoded.
func columnEncodings() []parquet.WriterProperty {
	var ps []parquet.WriterProperty
	for _, c := range deltaColumns {
		ps = append(ps, parquet.WithDictionaryFor(c, false),
			parquet.WithEncodingFor(c, parquet.Encodings.DeltaBinaryPacked))
	}
	for _, c := range plainColumns {
		ps = append(ps, parquet.WithDictionaryFor(c, false))
	}
	return ps
}
