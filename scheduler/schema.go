package scheduler

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/rpc"
)

// schemaToProto converts a result schema for JobStatus.schema. It covers
// the types sluice's engine produces.
func schemaToProto(s *arrow.Schema) (*rpc.Schema, error) {
	out := &rpc.Schema{}
	for _, f := range s.Fields() {
		t, err := typeToProto(f.Type)
		if err != nil {
			return nil, fmt.Errorf("result column %q: %w", f.Name, err)
		}
		out.Fields = append(out.Fields, &rpc.Field{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return out, nil
}

func typeToProto(t arrow.DataType) (*rpc.ArrowType, error) {
	switch t := t.(type) {
	case *arrow.NullType:
		return &rpc.ArrowType{Id: rpc.ArrowType_NULL}, nil
	case *arrow.BooleanType:
		return &rpc.ArrowType{Id: rpc.ArrowType_BOOL}, nil
	case *arrow.Int32Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_INT32}, nil
	case *arrow.Int64Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_INT64}, nil
	case *arrow.Float64Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_FLOAT64}, nil
	case *arrow.StringType:
		return &rpc.ArrowType{Id: rpc.ArrowType_UTF8}, nil
	case *arrow.Date32Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_DATE32}, nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Microsecond {
			return &rpc.ArrowType{Id: rpc.ArrowType_TIMESTAMP_US}, nil
		}
	case *arrow.Decimal128Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_DECIMAL128, Precision: t.Precision, Scale: t.Scale}, nil
	case *arrow.MonthDayNanoIntervalType:
		return &rpc.ArrowType{Id: rpc.ArrowType_INTERVAL_MONTH_DAY_NANO}, nil
	}
	return nil, fmt.Errorf("type %s cannot be sent to clients", t)
}
