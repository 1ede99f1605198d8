package catalog

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// MemTable is a table of record batches held in memory (CREATE TABLE AS,
// VALUES registered as a table, tests). Every batch must have the table's
// schema.
type MemTable struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	rows    int64
	bytes   int64
}

// NewMemTable returns a table over batches. It retains them; Release gives
// them back.
func NewMemTable(schema *arrow.Schema, batches []arrow.RecordBatch) *MemTable {
	t := &MemTable{schema: schema, batches: make([]arrow.RecordBatch, len(batches))}
	for i, b := range batches {
		b.Retain()
		t.batches[i] = b
		t.rows += b.NumRows()
		t.bytes += batchBytes(b)
	}
	return t
}

// Schema implements Table.
func (t *MemTable) Schema() *arrow.Schema { return t.schema }

// Statistics implements Table: exact rows and buffer bytes.
func (t *MemTable) Statistics() Statistics {
	return Statistics{NumRows: t.rows, TotalBytes: t.bytes}
}

// Batches are the table's batches. The table keeps ownership: callers Retain
// what they hand on and never Release these references.
func (t *MemTable) Batches() []arrow.RecordBatch { return t.batches }

// Release drops the table's references to its batches, once it is no
// longer registered or scanned.
func (t *MemTable) Release() {
	for _, b := range t.batches {
		b.Release()
	}
	t.batches = nil
}

var _ Table = (*MemTable)(nil)

// batchBytes is the size of the buffers behind a batch (shared buffers
// counted once per reference).
func batchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}
