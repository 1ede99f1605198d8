package expr

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"sluice/plan"
	"sluice/rpc"
)

// Expressions, types, literals and schemas travel to executors as the
// rpc messages of rpc/plan.proto. Decoding rebuilds every node with the
// checks Compile applies (literal values match their types, casts are
// supported, constant LIKE patterns are well formed, functions exist with a
// valid arity), so a decoded expression evaluates exactly as the original
// and a corrupt or foreign message fails at decode time, not mid-query.

// TypeToProto converts one of sluice's data types (null, bool, int32,
// int64, float64, utf8, date32, timestamp[us], decimal128(p,s),
// month_day_nano interval, list<utf8>).
func TypeToProto(t arrow.DataType) (*rpc.ArrowType, error) {
	if t == nil {
		return nil, fmt.Errorf("encode type: missing type")
	}
	switch t.ID() {
	case arrow.NULL:
		return &rpc.ArrowType{Id: rpc.ArrowType_NULL}, nil
	case arrow.BOOL:
		return &rpc.ArrowType{Id: rpc.ArrowType_BOOL}, nil
	case arrow.INT32:
		return &rpc.ArrowType{Id: rpc.ArrowType_INT32}, nil
	case arrow.INT64:
		return &rpc.ArrowType{Id: rpc.ArrowType_INT64}, nil
	case arrow.FLOAT64:
		return &rpc.ArrowType{Id: rpc.ArrowType_FLOAT64}, nil
	case arrow.STRING:
		return &rpc.ArrowType{Id: rpc.ArrowType_UTF8}, nil
	case arrow.DATE32:
		return &rpc.ArrowType{Id: rpc.ArrowType_DATE32}, nil
	case arrow.TIMESTAMP:
		ts := t.(*arrow.TimestampType)
		if ts.Unit != arrow.Microsecond || ts.TimeZone != "" {
			return nil, fmt.Errorf("encode type: %s is not supported (only timestamp[us] without a time zone)", t)
		}
		return &rpc.ArrowType{Id: rpc.ArrowType_TIMESTAMP_US}, nil
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		if d.Precision < 1 || d.Precision > plan.MaxDecimalPrecision || d.Scale < 0 || d.Scale > d.Precision {
			return nil, fmt.Errorf("encode type: invalid %s", t)
		}
		return &rpc.ArrowType{Id: rpc.ArrowType_DECIMAL128, Precision: d.Precision, Scale: d.Scale}, nil
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return &rpc.ArrowType{Id: rpc.ArrowType_INTERVAL_MONTH_DAY_NANO}, nil
	case arrow.LIST:
		elem := t.(*arrow.ListType).Elem()
		if elem.ID() == arrow.LIST {
			return nil, fmt.Errorf("encode type: arrays of arrays are not supported")
		}
		et, err := TypeToProto(elem)
		if err != nil {
			return nil, err
		}
		return &rpc.ArrowType{Id: rpc.ArrowType_LIST, Elem: et}, nil
	}
	return nil, fmt.Errorf("encode type: %s is not one of sluice's types", t)
}

// TypeFromProto converts a type message back. It returns the same type
// values the planner uses (plan.Int64, plan.Timestamp, ...), so decoded
// types compare equal to planned ones.
func TypeFromProto(t *rpc.ArrowType) (arrow.DataType, error) {
	if t == nil {
		return nil, fmt.Errorf("decode type: missing type")
	}
	switch t.Id {
	case rpc.ArrowType_NULL:
		return plan.Null, nil
	case rpc.ArrowType_BOOL:
		return plan.Bool, nil
	case rpc.ArrowType_INT32:
		return plan.Int32, nil
	case rpc.ArrowType_INT64:
		return plan.Int64, nil
	case rpc.ArrowType_FLOAT64:
		return plan.Float64, nil
	case rpc.ArrowType_UTF8:
		return plan.Utf8, nil
	case rpc.ArrowType_DATE32:
		return plan.Date32, nil
	case rpc.ArrowType_TIMESTAMP_US:
		return plan.Timestamp, nil
	case rpc.ArrowType_DECIMAL128:
		if t.Precision < 1 || t.Precision > plan.MaxDecimalPrecision || t.Scale < 0 || t.Scale > t.Precision {
			return nil, fmt.Errorf("decode type: invalid DECIMAL(%d, %d)", t.Precision, t.Scale)
		}
		return &arrow.Decimal128Type{Precision: t.Precision, Scale: t.Scale}, nil
	case rpc.ArrowType_INTERVAL_MONTH_DAY_NANO:
		return plan.Interval, nil
	case rpc.ArrowType_LIST:
		if t.Elem.GetId() == rpc.ArrowType_LIST {
			return nil, fmt.Errorf("decode type: arrays of arrays are not supported")
		}
		elem, err := TypeFromProto(t.Elem)
		if err != nil {
			return nil, err
		}
		return plan.ArrayOf(elem), nil
	}
	return nil, fmt.Errorf("decode type: unknown type id %d", t.Id)
}

// LiteralToProto converts a constant following plan.Literal's value
// conventions.
func LiteralToProto(l plan.Literal) (*rpc.Literal, error) {
	t, err := TypeToProto(l.Typ)
	if err != nil {
		return nil, fmt.Errorf("encode literal %v: %w", l.Val, err)
	}
	out := &rpc.Literal{Type: t}
	if l.Val == nil {
		out.IsNull = true
		return out, nil
	}
	bad := func() (*rpc.Literal, error) {
		return nil, fmt.Errorf("encode literal: value %v (%T) does not match type %s", l.Val, l.Val, plan.TypeName(l.Typ))
	}
	switch l.Typ.ID() {
	case arrow.NULL:
		return bad()
	case arrow.BOOL:
		v, ok := l.Val.(bool)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_BoolValue{BoolValue: v}
	case arrow.INT32, arrow.DATE32:
		v, ok := l.Val.(int32)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_Int32Value{Int32Value: v}
	case arrow.INT64, arrow.TIMESTAMP:
		v, ok := l.Val.(int64)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_Int64Value{Int64Value: v}
	case arrow.FLOAT64:
		v, ok := l.Val.(float64)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_Float64Value{Float64Value: v}
	case arrow.DECIMAL128:
		v, ok := l.Val.(decimal128.Num)
		if !ok {
			return bad()
		}
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b[:8], v.LowBits())
		binary.LittleEndian.PutUint64(b[8:], uint64(v.HighBits()))
		out.Value = &rpc.Literal_DecimalValue{DecimalValue: b}
	case arrow.STRING:
		v, ok := l.Val.(string)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_StringValue{StringValue: v}
	case arrow.INTERVAL_MONTH_DAY_NANO:
		v, ok := l.Val.(arrow.MonthDayNanoInterval)
		if !ok {
			return bad()
		}
		out.Value = &rpc.Literal_IntervalValue{IntervalValue: &rpc.Interval{Months: v.Months, Days: v.Days, Nanoseconds: v.Nanoseconds}}
	default:
		return bad()
	}
	return out, nil
}

// LiteralFromProto converts a literal message back; the value must be the
// one its type calls for.
func LiteralFromProto(l *rpc.Literal) (plan.Literal, error) {
	if l == nil {
		return plan.Literal{}, fmt.Errorf("decode literal: missing literal")
	}
	t, err := TypeFromProto(l.Type)
	if err != nil {
		return plan.Literal{}, fmt.Errorf("decode literal: %w", err)
	}
	if l.IsNull || t.ID() == arrow.NULL {
		return plan.Literal{Typ: t}, nil
	}
	var v any
	ok := false
	switch t.ID() {
	case arrow.BOOL:
		var x *rpc.Literal_BoolValue
		if x, ok = l.Value.(*rpc.Literal_BoolValue); ok {
			v = x.BoolValue
		}
	case arrow.INT32, arrow.DATE32:
		var x *rpc.Literal_Int32Value
		if x, ok = l.Value.(*rpc.Literal_Int32Value); ok {
			v = x.Int32Value
		}
	case arrow.INT64, arrow.TIMESTAMP:
		var x *rpc.Literal_Int64Value
		if x, ok = l.Value.(*rpc.Literal_Int64Value); ok {
			v = x.Int64Value
		}
	case arrow.FLOAT64:
		var x *rpc.Literal_Float64Value
		if x, ok = l.Value.(*rpc.Literal_Float64Value); ok {
			v = x.Float64Value
		}
	case arrow.DECIMAL128:
		var x *rpc.Literal_DecimalValue
		if x, ok = l.Value.(*rpc.Literal_DecimalValue); ok {
			if len(x.DecimalValue) != 16 {
				return plan.Literal{}, fmt.Errorf("decode literal: decimal value has %d bytes, want 16", len(x.DecimalValue))
			}
			lo := binary.LittleEndian.Uint64(x.DecimalValue[:8])
			hi := int64(binary.LittleEndian.Uint64(x.DecimalValue[8:]))
			v = decimal128.New(hi, lo)
		}
	case arrow.STRING:
		var x *rpc.Literal_StringValue
		if x, ok = l.Value.(*rpc.Literal_StringValue); ok {
			v = x.StringValue
		}
	case arrow.INTERVAL_MONTH_DAY_NANO:
		var x *rpc.Literal_IntervalValue
		if x, ok = l.Value.(*rpc.Literal_IntervalValue); ok && x.IntervalValue != nil {
			iv := x.IntervalValue
			v = arrow.MonthDayNanoInterval{Months: iv.Months, Days: iv.Days, Nanoseconds: iv.Nanoseconds}
		} else {
			ok = false
		}
	}
	if !ok {
		return plan.Literal{}, fmt.Errorf("decode literal: value %T does not match type %s", l.Value, plan.TypeName(t))
	}
	return plan.Literal{Typ: t, Val: v}, nil
}

// SchemaToProto converts a schema of sluice types; field metadata is not
// carried.
func SchemaToProto(s *arrow.Schema) (*rpc.Schema, error) {
	if s == nil {
		return nil, fmt.Errorf("encode schema: missing schema")
	}
	out := &rpc.Schema{Fields: make([]*rpc.Field, s.NumFields())}
	for i, f := range s.Fields() {
		t, err := TypeToProto(f.Type)
		if err != nil {
			return nil, fmt.Errorf("encode schema: field %q: %w", f.Name, err)
		}
		out.Fields[i] = &rpc.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return out, nil
}

// SchemaFromProto converts a schema message back.
func SchemaFromProto(s *rpc.Schema) (*arrow.Schema, error) {
	if s == nil {
		return nil, fmt.Errorf("decode schema: missing schema")
	}
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		if f == nil {
			return nil, fmt.Errorf("decode schema: field %d is missing", i)
		}
		t, err := TypeFromProto(f.Type)
		if err != nil {
			return nil, fmt.Errorf("decode schema: field %q: %w", f.Name, err)
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil), nil
}

// ToProto converts a physical expression. Every node type of this package
// is supported; anything else is an error naming its Go type.
func ToProto(e Expr) (*rpc.PhysicalExpr, error) {
	switch e := e.(type) {
	case nil:
		return nil, fmt.Errorf("encode expression: missing expression")
	case *Column:
		t, err := TypeToProto(e.Type)
		if err != nil {
			return nil, fmt.Errorf("encode column %s: %w", e, err)
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Column{Column: &rpc.ColumnExpr{Index: int32(e.Index), Name: e.Name, Type: t}}}, nil
	case *Literal:
		l, err := LiteralToProto(e.Value)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Literal{Literal: l}}, nil
	case *Binary:
		l, r, err := toProto2(e.L, e.R)
		if err != nil {
			return nil, err
		}
		t, err := TypeToProto(e.Type)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e, err)
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Binary{Binary: &rpc.BinaryExpr{Op: int32(e.Op), Left: l, Right: r, Type: t}}}, nil
	case *Not:
		x, err := ToProto(e.X)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Not{Not: &rpc.UnaryExpr{X: x}}}, nil
	case *Negate:
		x, err := ToProto(e.X)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Negate{Negate: &rpc.UnaryExpr{X: x}}}, nil
	case *IsNull:
		x, err := ToProto(e.X)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_IsNull{IsNull: &rpc.IsNullExpr{X: x, Negated: e.Negated}}}, nil
	case *DistinctFrom:
		l, err := ToProto(e.L)
		if err != nil {
			return nil, err
		}
		r, err := ToProto(e.R)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_DistinctFrom{DistinctFrom: &rpc.DistinctFromExpr{Left: l, Right: r, Negated: e.Negated}}}, nil
	case *Cast:
		x, err := ToProto(e.X)
		if err != nil {
			return nil, err
		}
		t, err := TypeToProto(e.To)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e, err)
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Cast{Cast: &rpc.CastExpr{X: x, To: t, Try: e.Try}}}, nil
	case *Case:
		out := &rpc.CaseExpr{Whens: make([]*rpc.WhenThen, len(e.Whens))}
		for i, w := range e.Whens {
			c, t, err := toProto2(w.Cond, w.Then)
			if err != nil {
				return nil, err
			}
			out.Whens[i] = &rpc.WhenThen{When: c, Then: t}
		}
		if e.Else != nil {
			x, err := ToProto(e.Else)
			if err != nil {
				return nil, err
			}
			out.Else = x
		}
		t, err := TypeToProto(e.Type)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e, err)
		}
		out.Type = t
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Case{Case: out}}, nil
	case *Coalesce:
		f, err := funcToProto("coalesce", e.Args, e.Type)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Coalesce{Coalesce: f}}, nil
	case *NullIf:
		a, b, err := toProto2(e.A, e.B)
		if err != nil {
			return nil, err
		}
		t, err := TypeToProto(e.Type)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e, err)
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Nullif{Nullif: &rpc.NullIfExpr{A: a, B: b, Type: t}}}, nil
	case *InList:
		x, err := ToProto(e.X)
		if err != nil {
			return nil, err
		}
		list, err := toProtoAll(e.List)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_InList{InList: &rpc.InListExpr{X: x, List: list, Negated: e.Negated}}}, nil
	case *Like:
		x, p, err := toProto2(e.X, e.Pattern)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Like{Like: &rpc.LikeExpr{X: x, Pattern: p, Negated: e.Negated}}}, nil
	case *Func:
		f, err := funcToProto(e.Name, e.Args, e.Type)
		if err != nil {
			return nil, err
		}
		return &rpc.PhysicalExpr{Expr: &rpc.PhysicalExpr_Func{Func: f}}, nil
	}
	return nil, fmt.Errorf("encode expression %s: expression type %T cannot be serialized", e, e)
}

func toProto2(a, b Expr) (*rpc.PhysicalExpr, *rpc.PhysicalExpr, error) {
	pa, err := ToProto(a)
	if err != nil {
		return nil, nil, err
	}
	pb, err := ToProto(b)
	if err != nil {
		return nil, nil, err
	}
	return pa, pb, nil
}

func toProtoAll(es []Expr) ([]*rpc.PhysicalExpr, error) {
	out := make([]*rpc.PhysicalExpr, len(es))
	for i, e := range es {
		p, err := ToProto(e)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func funcToProto(name string, args []Expr, typ arrow.DataType) (*rpc.FuncExpr, error) {
	ps, err := toProtoAll(args)
	if err != nil {
		return nil, err
	}
	t, err := TypeToProto(typ)
	if err != nil {
		return nil, fmt.Errorf("encode %s(...): %w", name, err)
	}
	return &rpc.FuncExpr{Name: name, Args: ps, Type: t}, nil
}

// FromProto converts an expression message back, applying Compile's checks.
func FromProto(p *rpc.PhysicalExpr) (Expr, error) {
	if p == nil {
		return nil, fmt.Errorf("decode expression: missing expression")
	}
	switch n := p.Expr.(type) {
	case *rpc.PhysicalExpr_Column:
		c := n.Column
		if c == nil || c.Index < 0 {
			return nil, fmt.Errorf("decode expression: invalid column reference")
		}
		t, err := TypeFromProto(c.Type)
		if err != nil {
			return nil, fmt.Errorf("decode column %s: %w", c.Name, err)
		}
		return &Column{Index: int(c.Index), Name: c.Name, Type: t}, nil
	case *rpc.PhysicalExpr_Literal:
		l, err := LiteralFromProto(n.Literal)
		if err != nil {
			return nil, err
		}
		if err := checkLiteral(&l); err != nil {
			return nil, err
		}
		return &Literal{Value: l}, nil
	case *rpc.PhysicalExpr_Binary:
		b := n.Binary
		if b == nil {
			return nil, fmt.Errorf("decode expression: empty binary expression")
		}
		op := plan.BinaryOp(b.Op)
		if op < plan.OpAdd || op > plan.OpConcat {
			return nil, fmt.Errorf("decode expression: unknown binary operator %d", b.Op)
		}
		l, r, err := fromProto2(b.Left, b.Right)
		if err != nil {
			return nil, err
		}
		t, err := TypeFromProto(b.Type)
		if err != nil {
			return nil, fmt.Errorf("decode %s expression: %w", op, err)
		}
		return &Binary{Op: op, L: l, R: r, Type: t}, nil
	case *rpc.PhysicalExpr_Not:
		x, err := FromProto(n.Not.GetX())
		if err != nil {
			return nil, err
		}
		return &Not{X: x}, nil
	case *rpc.PhysicalExpr_Negate:
		x, err := FromProto(n.Negate.GetX())
		if err != nil {
			return nil, err
		}
		return &Negate{X: x}, nil
	case *rpc.PhysicalExpr_IsNull:
		x, err := FromProto(n.IsNull.GetX())
		if err != nil {
			return nil, err
		}
		return &IsNull{X: x, Negated: n.IsNull.GetNegated()}, nil
	case *rpc.PhysicalExpr_Cast:
		x, err := FromProto(n.Cast.GetX())
		if err != nil {
			return nil, err
		}
		to, err := TypeFromProto(n.Cast.GetTo())
		if err != nil {
			return nil, fmt.Errorf("decode cast of %s: %w", x, err)
		}
		if !castSupported(x.DataType(), to) {
			return nil, fmt.Errorf("decode expression: cannot cast %s to %s", plan.TypeName(x.DataType()), plan.TypeName(to))
		}
		return &Cast{X: x, To: to, Try: n.Cast.GetTry()}, nil
	case *rpc.PhysicalExpr_Case:
		c := n.Case
		if c == nil {
			return nil, fmt.Errorf("decode expression: empty CASE")
		}
		out := &Case{Whens: make([]When, len(c.Whens))}
		for i, w := range c.Whens {
			cond, then, err := fromProto2(w.GetWhen(), w.GetThen())
			if err != nil {
				return nil, err
			}
			out.Whens[i] = When{Cond: cond, Then: then}
		}
		if c.Else != nil {
			x, err := FromProto(c.Else)
			if err != nil {
				return nil, err
			}
			out.Else = x
		}
		t, err := TypeFromProto(c.Type)
		if err != nil {
			return nil, fmt.Errorf("decode CASE: %w", err)
		}
		out.Type = t
		return out, nil
	case *rpc.PhysicalExpr_Coalesce:
		args, t, err := funcFromProto(n.Coalesce)
		if err != nil {
			return nil, err
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("decode expression: coalesce needs at least one argument")
		}
		return &Coalesce{Args: args, Type: t}, nil
	case *rpc.PhysicalExpr_Nullif:
		a, b, err := fromProto2(n.Nullif.GetA(), n.Nullif.GetB())
		if err != nil {
			return nil, err
		}
		t, err := TypeFromProto(n.Nullif.GetType())
		if err != nil {
			return nil, fmt.Errorf("decode nullif: %w", err)
		}
		return &NullIf{A: a, B: b, Type: t}, nil
	case *rpc.PhysicalExpr_DistinctFrom:
		l, r, err := fromProto2(n.DistinctFrom.GetLeft(), n.DistinctFrom.GetRight())
		if err != nil {
			return nil, err
		}
		if err := checkDistinctFrom(l, r); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		return &DistinctFrom{L: l, R: r, Negated: n.DistinctFrom.GetNegated()}, nil
	case *rpc.PhysicalExpr_InList:
		x, err := FromProto(n.InList.GetX())
		if err != nil {
			return nil, err
		}
		list, err := fromProtoAll(n.InList.GetList())
		if err != nil {
			return nil, err
		}
		return &InList{X: x, List: list, Negated: n.InList.GetNegated()}, nil
	case *rpc.PhysicalExpr_Like:
		x, pat, err := fromProto2(n.Like.GetX(), n.Like.GetPattern())
		if err != nil {
			return nil, err
		}
		out := &Like{X: x, Pattern: pat, Negated: n.Like.GetNegated()}
		if l, ok := pat.(*Literal); ok {
			if s, ok := l.Value.Val.(string); ok {
				if _, err := compileLike([]byte(s)); err != nil {
					return nil, fmt.Errorf("decode %s: %w", out, err)
				}
			}
		}
		return out, nil
	case *rpc.PhysicalExpr_Func:
		args, t, err := funcFromProto(n.Func)
		if err != nil {
			return nil, err
		}
		name := n.Func.GetName()
		ar, ok := funcArity[name]
		if !ok {
			return nil, fmt.Errorf("decode expression: unknown function %q", name)
		}
		if len(args) < ar[0] || len(args) > ar[1] {
			return nil, fmt.Errorf("decode expression: %s: wrong number of arguments (%d)", name, len(args))
		}
		return &Func{Name: name, Args: args, Type: t}, nil
	}
	return nil, fmt.Errorf("decode expression: unknown expression kind %T", p.Expr)
}

func fromProto2(a, b *rpc.PhysicalExpr) (Expr, Expr, error) {
	ea, err := FromProto(a)
	if err != nil {
		return nil, nil, err
	}
	eb, err := FromProto(b)
	if err != nil {
		return nil, nil, err
	}
	return ea, eb, nil
}

func fromProtoAll(ps []*rpc.PhysicalExpr) ([]Expr, error) {
	out := make([]Expr, len(ps))
	for i, p := range ps {
		e, err := FromProto(p)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func funcFromProto(f *rpc.FuncExpr) ([]Expr, arrow.DataType, error) {
	if f == nil {
		return nil, nil, fmt.Errorf("decode expression: empty function call")
	}
	args, err := fromProtoAll(f.Args)
	if err != nil {
		return nil, nil, err
	}
	t, err := TypeFromProto(f.Type)
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s(...): %w", f.Name, err)
	}
	return args, t, nil
}

// CheckColumns verifies that every column e reads exists in s with the type
// e expects, so a plan decoded from a foreign or corrupt message fails at
// decode time instead of panicking mid-query.
func CheckColumns(e Expr, s *arrow.Schema) error {
	var err error
	walkColumns(e, func(c *Column) bool {
		if c.Index < 0 || c.Index >= s.NumFields() {
			err = fmt.Errorf("column %s: index out of range for an input of %d columns", c, s.NumFields())
		} else if ft := s.Field(c.Index).Type; !arrow.TypeEqual(ft, c.Type) {
			err = fmt.Errorf("column %s is %s, but input column %d is %s", c, plan.TypeName(c.Type), c.Index, plan.TypeName(ft))
		}
		return err == nil
	})
	return err
}
