package physical

import (
	"github.com/apache/arrow-go/v18/arrow"

	"sluice/catalog"
	"sluice/rpc"
)

// Physical plans travel between processes as rpc.PhysicalPlan messages.
// EncodePlan and DecodePlan (proto.go) convert every operator of this
// package; operators defined elsewhere (the exchange operators, the file
// writes of package datasource/write) plug in through an ExtensionCodec
// each, several joined by Codecs. This is why physical imports rpc: the
// conversion needs the operators' unexported fields.

// ExtensionCodec converts operators this package does not know.
type ExtensionCodec interface {
	// Encode returns the message for op, or (nil, nil) when op is not one
	// of its operators. encode converts op's children.
	Encode(op Operator, encode func(Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error)
	// Decode returns the operator for n, or (nil, nil) when n is not one of
	// its messages. decode converts children.
	Decode(n *rpc.PhysicalPlan, decode func(*rpc.PhysicalPlan) (Operator, error)) (Operator, error)
}

// Codecs is an ExtensionCodec made of several: each operator or message
// goes to the first that knows it.
type Codecs []ExtensionCodec

// Encode implements ExtensionCodec.
func (cs Codecs) Encode(op Operator, encode func(Operator) (*rpc.PhysicalPlan, error)) (*rpc.PhysicalPlan, error) {
	for _, c := range cs {
		out, err := c.Encode(op, encode)
		if err != nil || out != nil {
			return out, err
		}
	}
	return nil, nil
}

// Decode implements ExtensionCodec.
func (cs Codecs) Decode(n *rpc.PhysicalPlan, decode func(*rpc.PhysicalPlan) (Operator, error)) (Operator, error) {
	for _, c := range cs {
		op, err := c.Decode(n, decode)
		if err != nil || op != nil {
			return op, err
		}
	}
	return nil, nil
}

// TableResolver opens the tables that scans name by location, on the
// process decoding the plan. Implementations cache: one query decodes many
// tasks naming the same table. version is the planner's Version of the
// table ("" for any): a table whose files have another version is opened
// again, and one that still differs is an error, never read.
type TableResolver interface {
	Parquet(location, version string) (*catalog.ParquetTable, error)
	CSV(location, version string, opts catalog.CSVOptions, schema *arrow.Schema) (*catalog.CSVTable, error)
}

// ListedTableResolver opens tables from the file list the planner made
// (object store locations, which executors do not list again). A
// TableResolver that implements it caches those tables too.
type ListedTableResolver interface {
	ParquetFiles(location, version string, files []catalog.FileInfo) (*catalog.ParquetTable, error)
	CSVFiles(location, version string, files []catalog.FileInfo, opts catalog.CSVOptions, schema *arrow.Schema) (*catalog.CSVTable, error)
}
