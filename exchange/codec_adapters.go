package exchange

// DELETE THIS FILE when physical/expr gains ToProto, FromProto,
// SchemaToProto and SchemaFromProto (being written concurrently): codec.go
// then calls them directly — replace exprToProto with expr.ToProto,
// exprFromProto with expr.FromProto, schemaToProto with expr.SchemaToProto
// and schemaFromProto with expr.SchemaFromProto.
//
// Until then these adapters keep the codec building and usable: schemas
// convert fully; of expressions only column references (what hash
// partition keys almost always are) convert, and anything else fails with
// a clear error.

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/physical/expr"
	"sluice/rpc"
)

func exprToProto(e expr.Expr) (*rpc.PhysicalExpr, error) {
	c, ok := e.(*expr.Column)
	if !ok {
		return nil, fmt.Errorf("serializing expression %s (%T): only column references are supported until physical/expr's ToProto lands", e, e)
	}
	t, err := typeToProto(c.Type)
	if err != nil {
		return nil, err
	}
	return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Index: int32(c.Index), Name: c.Name, Type: t}}}, nil
}

func exprFromProto(p *rpc.PhysicalExpr) (expr.Expr, error) {
	c := p.GetColumn()
	if c == nil {
		return nil, fmt.Errorf("deserializing expression %T: only column references are supported until physical/expr's FromProto lands", p.GetExpr())
	}
	t, err := typeFromProto(c.Type)
	if err != nil {
		return nil, err
	}
	return &expr.Column{Index: int(c.Index), Name: c.Name, Type: t}, nil
}

func schemaToProto(s *arrow.Schema) *rpc.Schema {
	out := &rpc.Schema{}
	for _, f := range s.Fields() {
		// An unsupported type is kept as NULL; schemaFromProto cannot tell,
		// which is why the real expr.SchemaToProto should replace this.
		t, _ := typeToProto(f.Type)
		out.Fields = append(out.Fields, &rpc.Field{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return out
}

func schemaFromProto(s *rpc.Schema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(s.GetFields()))
	for i, f := range s.GetFields() {
		t, err := typeFromProto(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil), nil
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
		if t.Unit == arrow.Microsecond && t.TimeZone == "" {
			return &rpc.ArrowType{Id: rpc.ArrowType_TIMESTAMP_US}, nil
		}
	case *arrow.Decimal128Type:
		return &rpc.ArrowType{Id: rpc.ArrowType_DECIMAL128, Precision: t.Precision, Scale: t.Scale}, nil
	case *arrow.MonthDayNanoIntervalType:
		return &rpc.ArrowType{Id: rpc.ArrowType_INTERVAL_MONTH_DAY_NANO}, nil
	}
	return &rpc.ArrowType{Id: rpc.ArrowType_NULL}, fmt.Errorf("type %s cannot be serialized", t)
}

func typeFromProto(t *rpc.ArrowType) (arrow.DataType, error) {
	switch t.GetId() {
	case rpc.ArrowType_NULL:
		return arrow.Null, nil
	case rpc.ArrowType_BOOL:
		return arrow.FixedWidthTypes.Boolean, nil
	case rpc.ArrowType_INT32:
		return arrow.PrimitiveTypes.Int32, nil
	case rpc.ArrowType_INT64:
		return arrow.PrimitiveTypes.Int64, nil
	case rpc.ArrowType_FLOAT64:
		return arrow.PrimitiveTypes.Float64, nil
	case rpc.ArrowType_UTF8:
		return arrow.BinaryTypes.String, nil
	case rpc.ArrowType_DATE32:
		return arrow.FixedWidthTypes.Date32, nil
	case rpc.ArrowType_TIMESTAMP_US:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case rpc.ArrowType_DECIMAL128:
		return &arrow.Decimal128Type{Precision: t.GetPrecision(), Scale: t.GetScale()}, nil
	case rpc.ArrowType_INTERVAL_MONTH_DAY_NANO:
		return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
	}
	return nil, fmt.Errorf("unknown arrow type id %d", t.GetId())
}
