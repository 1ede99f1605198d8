package session

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// arrowRecord rebuilds b under schema (same column types), retaining columns.
func arrowRecord(schema *arrow.Schema, b arrow.RecordBatch) arrow.RecordBatch {
	return array.NewRecordBatch(schema, b.Columns(), b.NumRows())
}
