package write

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/catalog"
	"sluice/physical"
	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// A write (COPY TO, CREATE TABLE AS, INSERT) is planned as
//
//	WriteCommit
//	  CoalescePartitions
//	    FileSink
//	      <query>
//
// FileSink writes each input partition to files of its own under
// temporary names and outputs one row per file: (temp, final, rows,
// marked). WriteCommit, in the write's single final task, hands the files
// it is given to the task's physical.CommitList and outputs the row count
// (of the rows written, or of the marked ones for DELETE and UPDATE); whoever runs
// the job renames them (CommitFiles) once it has succeeded. On a cluster
// the CoalescePartitions is a stage boundary, so the final task sees the
// output of exactly one successful attempt of each FileSink task: files of
// failed, cancelled or superseded attempts are never renamed, and are
// removed with RemoveLeftovers when the job ends.

// Compile-time interface checks.
var (
	_ physical.Operator = (*FileSink)(nil)
	_ physical.Operator = (*WriteCommit)(nil)
)

// writtenFilesSchema is FileSink's output: one row per file written.
// marked is the task's count of marked rows (Spec.Mark), on its first
// row; a task that marked rows but wrote no file lists them on a row of
// no file (temp and final empty).
var writtenFilesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "temp", Type: arrow.BinaryTypes.String},
	{Name: "final", Type: arrow.BinaryTypes.String},
	{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "marked", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// writeCountSchema is WriteCommit's output, as DuckDB answers a COPY.
var writeCountSchema = arrow.NewSchema([]arrow.Field{{Name: "count", Type: arrow.PrimitiveTypes.Int64}}, nil)

// FileSink writes its input's partitions to files: one file per partition
// (per partition value with PartitionBy), under a temporary name.
type FileSink struct {
	input physical.Operator
	spec  Spec
	// fileSchema is the input schema with the written column names, all
	// nullable.
	fileSchema *arrow.Schema
}

// NewFileSink returns a FileSink writing input as spec says.
func NewFileSink(input physical.Operator, spec Spec) (*FileSink, error) {
	fields := input.Schema().Fields()
	switch spec.Mark {
	case "":
	case MarkDeleted, MarkUpdated:
		if len(fields) == 0 || fields[len(fields)-1].Type.ID() != arrow.BOOL {
			return nil, fmt.Errorf("file sink: the input's last column is not the boolean mark of %s rows", spec.Mark)
		}
		fields = fields[:len(fields)-1]
	default:
		return nil, fmt.Errorf("file sink: unknown mark %q", spec.Mark)
	}
	if len(spec.Names) != len(fields) {
		return nil, fmt.Errorf("file sink: %d column names for %d columns", len(spec.Names), len(fields))
	}
	out := make([]arrow.Field, len(fields))
	for i, f := range fields {
		out[i] = arrow.Field{Name: spec.Names[i], Type: f.Type, Nullable: true}
	}
	for _, c := range spec.PartitionBy {
		if c < 0 || c >= len(fields) {
			return nil, fmt.Errorf("file sink: partition column %d out of range", c)
		}
	}
	if spec.Format != "parquet" && spec.Format != "csv" {
		return nil, fmt.Errorf("file sink: unknown format %q", spec.Format)
	}
	if spec.WriteID == "" || strings.ContainsAny(spec.WriteID, `/\.`) {
		return nil, fmt.Errorf("file sink: bad write id %q", spec.WriteID)
	}
	return &FileSink{input: input, spec: spec, fileSchema: arrow.NewSchema(out, nil)}, nil
}

// Spec is what the sink writes where.
func (s *FileSink) Spec() Spec { return s.spec }

// Schema implements physical.Operator.
func (s *FileSink) Schema() *arrow.Schema { return writtenFilesSchema }

// Children implements physical.Operator.
func (s *FileSink) Children() []physical.Operator { return []physical.Operator{s.input} }

// OutputPartitioning implements physical.Operator: one output partition per input
// partition.
func (s *FileSink) OutputPartitioning() physical.Partitioning {
	return physical.Partitioning{Kind: physical.PartUnknown, Count: s.input.OutputPartitioning().Count}
}

func (s *FileSink) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FileSink: format=%s dir=%s", s.spec.Format, s.spec.Dir)
	if len(s.spec.PartitionBy) > 0 {
		names := make([]string, len(s.spec.PartitionBy))
		for i, c := range s.spec.PartitionBy {
			names[i] = s.spec.Names[c]
		}
		fmt.Fprintf(&b, " partition_by=[%s]", strings.Join(names, ", "))
	}
	if s.spec.Mark != "" {
		fmt.Fprintf(&b, " count=%s", s.spec.Mark)
	}
	return b.String()
}

// Execute implements physical.Operator. The stream writes the whole partition on
// its first Next and then returns the list of files written.
func (s *FileSink) Execute(ctx context.Context, partition int, tc *physical.TaskContext) (physical.Stream, error) {
	if err := s.spec.checkTarget(); err != nil {
		return nil, err
	}
	in, err := physical.ExecuteOp(ctx, s.input, partition, tc)
	if err != nil {
		return nil, err
	}
	return &fileSinkStream{sink: s, in: in, partition: partition, tc: tc, nonce: NewID()}, nil
}

// maxPartitionFiles bounds the files one task keeps open: every partition
// value has its own, with its buffered row group, so a PARTITION_BY over a
// column of millions of values fails clearly instead of exhausting file
// descriptors and memory.
const maxPartitionFiles = 1024

// openFile is one file a sink stream is writing.
type openFile struct {
	w fileWriter
	t fileTarget
	// temp is the target's name while writing, its reference (what the
	// commit publishes) once closed.
	temp, final string
	rows        int64
}

type fileSinkStream struct {
	sink      *FileSink
	in        physical.Stream
	partition int
	tc        *physical.TaskContext
	nonce     string // tells this attempt's temporary files from others'
	done      bool
	files     map[string]*openFile // by partition directory ("" without PartitionBy)
	order     []string
	res       *mempool.Reservation
	// marked counts the input's marked rows (Spec.Mark).
	marked int64
}

func (s *fileSinkStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.done {
		return nil, io.EOF
	}
	s.done = true
	if err := s.writeAll(ctx); err != nil {
		s.abort()
		return nil, err
	}
	return s.listing()
}

// writeAll drains the input into files and closes them.
func (s *fileSinkStream) writeAll(ctx context.Context) error {
	s.files = map[string]*openFile{}
	s.res = s.tc.Memory.NewReservation("FileSink")
	mem := s.tc.Alloc
	for {
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		err = s.writeBatch(ctx, b, mem)
		b.Release()
		if err != nil {
			return err
		}
	}
	if len(s.files) == 0 && s.partition == 0 {
		// Partition 0 always writes a file, empty if need be, so the
		// directory of a write of no rows still holds the schema and
		// reads back as an empty table. A partitioned write puts it in
		// the all-NULL partition's directory, keeping the layout one
		// that readers of Hive partitions accept.
		var parts []string
		for _, c := range s.sink.spec.PartitionBy {
			parts = append(parts, hiveValue(s.sink.spec.Names[c])+"=NULL")
		}
		if _, err := s.file(ctx, strings.Join(parts, "/")); err != nil {
			return err
		}
	}
	for _, k := range s.order {
		f := s.files[k]
		w := f.w
		f.w = nil
		if err := w.close(); err != nil {
			return fmt.Errorf("write %s: %w", f.temp, err)
		}
		f.temp = f.t.ref()
	}
	s.res.Free()
	return nil
}

// writeBatch writes b (with the file schema's names) to the file of each
// of its rows' partition directories.
func (s *fileSinkStream) writeBatch(ctx context.Context, b arrow.RecordBatch, mem memory.Allocator) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cols, n := b.Columns(), b.NumRows()
	if s.sink.spec.Mark != "" {
		var keep []int32
		cols, keep = s.unmark(cols)
		if s.sink.spec.Mark == MarkDeleted && len(keep) < int(n) {
			if len(keep) == 0 {
				return nil
			}
			all := array.NewRecordBatch(s.sink.fileSchema, cols, n)
			kept, err := kernels.SelectRows(mem, all, keep)
			all.Release()
			if err != nil {
				return err
			}
			defer kept.Release()
			cols, n = kept.Columns(), kept.NumRows()
		}
	}
	b = array.NewRecordBatch(s.sink.fileSchema, cols, n)
	defer b.Release()
	if len(s.sink.spec.PartitionBy) == 0 {
		return s.writeTo(ctx, "", b)
	}
	keys := s.partitionKeys(b)
	rows := map[string][]int32{}
	var order []string
	for i, k := range keys {
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		rows[k] = append(rows[k], int32(i))
	}
	if len(order) == 1 {
		return s.writeTo(ctx, order[0], b)
	}
	for _, k := range order {
		part, err := kernels.SelectRows(mem, b, rows[k])
		if err != nil {
			return err
		}
		err = s.writeTo(ctx, k, part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// unmark counts the rows the input's last column marks, and returns the
// other columns and the rows not marked (TRUE marks; FALSE and NULL do
// not). Only a DELETE needs the rows kept.
func (s *fileSinkStream) unmark(cols []arrow.Array) ([]arrow.Array, []int32) {
	mark := cols[len(cols)-1].(*array.Boolean)
	var keep []int32
	for i := 0; i < mark.Len(); i++ {
		if mark.IsValid(i) && mark.Value(i) {
			s.marked++
		} else if s.sink.spec.Mark == MarkDeleted {
			keep = append(keep, int32(i))
		}
	}
	return cols[:len(cols)-1], keep
}

// partitionKeys returns each row's partition directory, name=value/...
func (s *fileSinkStream) partitionKeys(b arrow.RecordBatch) []string {
	n := int(b.NumRows())
	keys := make([]string, n)
	for _, c := range s.sink.spec.PartitionBy {
		col := b.Column(c)
		name := hiveValue(s.sink.spec.Names[c])
		for i := 0; i < n; i++ {
			v := "NULL"
			if !col.IsNull(i) {
				v = hiveValue(col.ValueStr(i))
			}
			if keys[i] != "" {
				keys[i] += "/"
			}
			keys[i] += name + "=" + v
		}
	}
	return keys
}

// writeTo writes b to the file of partition directory key.
func (s *fileSinkStream) writeTo(ctx context.Context, key string, b arrow.RecordBatch) error {
	f, err := s.file(ctx, key)
	if err != nil {
		return err
	}
	before := f.w.buffered()
	if err := f.w.write(b); err != nil {
		return fmt.Errorf("write %s: %w", f.temp, err)
	}
	f.rows += b.NumRows()
	if grown := f.w.buffered() - before; grown > 0 {
		return s.res.Grow(grown)
	} else if grown < 0 {
		s.res.Shrink(min(-grown, s.res.Size()))
	}
	return nil
}

// file returns the open file of partition directory key, creating it.
func (s *fileSinkStream) file(ctx context.Context, key string) (*openFile, error) {
	if f, ok := s.files[key]; ok {
		return f, nil
	}
	if len(s.files) >= maxPartitionFiles {
		return nil, fmt.Errorf("PARTITION_BY: one task met more than %d distinct partition values; partition by a column with fewer values", maxPartitionFiles)
	}
	spec := &s.sink.spec
	k := len(s.order)
	f, err := s.create(ctx, key, k)
	if err != nil {
		return nil, err
	}
	w, err := openFileWriter(spec, f.t, s.sink.fileSchema, s.tc.Alloc)
	if err != nil {
		return nil, err
	}
	f.w = w
	s.files[key] = f
	s.order = append(s.order, key)
	return f, nil
}

// create starts the k-th file, in partition directory key: a local file
// under its temporary name, or an object upload left open.
func (s *fileSinkStream) create(ctx context.Context, key string, k int) (*openFile, error) {
	spec := &s.sink.spec
	if spec.remote() {
		final := spec.joinKey(key, spec.finalName(s.partition, k))
		if !spec.withinFolder(final) {
			return nil, fmt.Errorf("partition directory %q escapes %s", key, spec.Dir)
		}
		// The whole partition is written within one Next call, whose
		// context bounds the upload's requests.
		up, err := catalog.NewS3Upload(ctx, final)
		if err != nil {
			return nil, err
		}
		return &openFile{t: &objectTarget{S3Upload: up, url: final}, temp: final, final: final}, nil
	}
	dir := filepath.Join(spec.Dir, filepath.FromSlash(key))
	if !spec.within(filepath.Join(dir, "x")) {
		return nil, fmt.Errorf("partition directory %q escapes %s", key, spec.Dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	// The directory exists now, so the check follows every link in it (a
	// partition directory could be a link out of the allowed locations).
	if err := catalog.CheckAllowed(dir); err != nil {
		return nil, err
	}
	temp := filepath.Join(dir, spec.tempName(s.partition, k, s.nonce))
	t, err := createLocalTarget(temp)
	if err != nil {
		return nil, err
	}
	return &openFile{t: t, temp: temp, final: filepath.Join(dir, spec.finalName(s.partition, k))}, nil
}

// listing is the output batch: one row per file written.
func (s *fileSinkStream) listing() (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(s.tc.Alloc, writtenFilesSchema)
	defer b.Release()
	keys := append([]string(nil), s.order...)
	sort.Strings(keys)
	for i, k := range keys {
		f := s.files[k]
		b.Field(0).(*array.StringBuilder).Append(f.temp)
		b.Field(1).(*array.StringBuilder).Append(f.final)
		b.Field(2).(*array.Int64Builder).Append(f.rows)
		b.Field(3).(*array.Int64Builder).Append(s.markedOn(i))
	}
	if len(keys) == 0 && s.marked > 0 {
		b.Field(0).(*array.StringBuilder).Append("")
		b.Field(1).(*array.StringBuilder).Append("")
		b.Field(2).(*array.Int64Builder).Append(0)
		b.Field(3).(*array.Int64Builder).Append(s.marked)
	}
	return b.NewRecordBatch(), nil
}

// markedOn is the marked count the listing's i-th row carries: the
// task's on its first row.
func (s *fileSinkStream) markedOn(i int) int64 {
	if i == 0 {
		return s.marked
	}
	return 0
}

// abort closes and removes every file this attempt wrote: a failed or
// cancelled attempt leaves nothing behind (a killed process does; the
// scheduler removes that when the job ends).
func (s *fileSinkStream) abort() {
	for _, k := range s.order {
		f := s.files[k]
		// Closing the writer releases its buffers; the target drops
		// what it is sent meanwhile (an object's last part).
		f.t.drop()
		if f.w != nil {
			_ = f.w.close()
			f.w = nil
		}
		f.t.discard()
	}
	if s.res != nil {
		s.res.Free()
	}
}

func (s *fileSinkStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
	for _, k := range s.order {
		if f := s.files[k]; f.w != nil {
			// Closed before finishing: the attempt is abandoned.
			s.abort()
			return
		}
	}
	if s.res != nil {
		s.res.Free()
	}
}

// WriteCommit decides a write's files: it puts the files its single input
// partition lists (FileSink's output, coalesced) in the task's physical.CommitList,
// to be renamed once the job has succeeded, and outputs the number of rows
// written (of rows marked, for a Spec.Mark).
type WriteCommit struct {
	input physical.Operator
	spec  Spec
}

// NewWriteCommit returns a WriteCommit of input, a FileSink's output
// coalesced to one partition.
func NewWriteCommit(input physical.Operator, spec Spec) (*WriteCommit, error) {
	if !input.Schema().Equal(writtenFilesSchema) {
		return nil, fmt.Errorf("write commit: input is not a file listing: %s", input.Schema())
	}
	return &WriteCommit{input: input, spec: spec}, nil
}

// Spec is the write being committed.
func (c *WriteCommit) Spec() Spec { return c.spec }

// Schema implements physical.Operator.
func (c *WriteCommit) Schema() *arrow.Schema { return writeCountSchema }

// Children implements physical.Operator.
func (c *WriteCommit) Children() []physical.Operator { return []physical.Operator{c.input} }

// OutputPartitioning implements physical.Operator.
func (c *WriteCommit) OutputPartitioning() physical.Partitioning { return physical.SinglePartition }

func (c *WriteCommit) String() string {
	s := "WriteCommit: dir=" + c.spec.Dir
	if c.spec.Overwrite {
		s += " overwrite"
	}
	return s
}

// Execute implements physical.Operator.
func (c *WriteCommit) Execute(ctx context.Context, partition int, tc *physical.TaskContext) (physical.Stream, error) {
	if partition != 0 {
		return nil, fmt.Errorf("write commit: partition %d out of range", partition)
	}
	if n := c.input.OutputPartitioning().Count; n != 1 {
		return nil, fmt.Errorf("write commit: input has %d partitions, want 1", n)
	}
	if tc.Commit == nil {
		return nil, fmt.Errorf("internal: write commit: the task has no commit list")
	}
	in, err := physical.ExecuteOp(ctx, c.input, 0, tc)
	if err != nil {
		return nil, err
	}
	return &writeCommitStream{c: c, in: in, tc: tc}, nil
}

type writeCommitStream struct {
	c    *WriteCommit
	in   physical.Stream
	tc   *physical.TaskContext
	done bool
}

func (s *writeCommitStream) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.done {
		return nil, io.EOF
	}
	s.done = true
	var files []physical.CommitFile
	var rows int64
	for {
		b, err := s.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		temps := b.Column(0).(*array.String)
		finals := b.Column(1).(*array.String)
		counts := b.Column(2).(*array.Int64)
		marked := b.Column(3).(*array.Int64)
		for i := 0; i < int(b.NumRows()); i++ {
			if s.c.spec.Mark != "" {
				rows += marked.Value(i)
			} else {
				rows += counts.Value(i)
			}
			if temps.Value(i) == "" {
				continue // a task's marked rows, without a file
			}
			// Value aliases the batch's buffer, which is reused once
			// the batch is released: keep copies.
			files = append(files, physical.CommitFile{Temp: strings.Clone(temps.Value(i)), Final: strings.Clone(finals.Value(i))})
		}
		b.Release()
	}
	// The rename waits for the job's success: a job that fails or is
	// cancelled after this point commits nothing.
	s.tc.Commit.Set(files)
	bld := array.NewInt64Builder(s.tc.Alloc)
	defer bld.Release()
	bld.Append(rows)
	col := bld.NewArray()
	defer col.Release()
	return array.NewRecordBatch(writeCountSchema, []arrow.Array{col}, 1), nil
}

func (s *writeCommitStream) Close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
	}
}
