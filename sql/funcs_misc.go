package sql

import (
	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// Functions users of PostgreSQL and DuckDB reach for first: pg_typeof and
// typeof, gen_random_uuid and uuid, age, current_schema and
// current_database, and the range table function.

// Version is what version() answers: the binary's version line (set by
// main; "sluice dev" in tests).
var Version = "sluice dev"

func addMiscFunctions(fs map[string]*funcDef) {
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	fs["pg_typeof"] = scalar(bindTypeof(pgTypeName), sig("any", "VARCHAR (PostgreSQL's name of the argument's type)"))
	fs["typeof"] = scalar(bindTypeof(plan.TypeName), sig("any", "VARCHAR (sluice's name of the argument's type)"))
	uuid := scalar(bindUUID, sig("", "VARCHAR (a random version 4 UUID per row)"))
	fs["gen_random_uuid"], fs["uuid"] = uuid, uuid
	constant := func(v string) func(c *fcall) (plan.Expr, error) {
		return func(c *fcall) (plan.Expr, error) {
			if err := c.nargs(0, 0); err != nil {
				return nil, err
			}
			return &plan.Literal{Typ: plan.Utf8, Val: v}, nil
		}
	}
	fs["current_schema"] = scalar(constant(infoSchema), sig("", "VARCHAR ('main', the one schema)"))
	fs["current_database"] = scalar(constant(infoCatalog), sig("", "VARCHAR ('sluice')"))
	fs["version"] = scalar(func(c *fcall) (plan.Expr, error) { return constant(Version)(c) }, sig("", "VARCHAR (the binary's --version)"))
	fs["age"] = scalar(bindAge, sig("TIMESTAMP", "INTERVAL (from the argument to today's midnight)"), sig("TIMESTAMP, TIMESTAMP", "INTERVAL"))
	// unnest is bound by the select list (unnestCall) or as a FROM item
	// (unnestFrom); the entry is what SHOW FUNCTIONS lists.
	fs["unnest"] = scalar(func(c *fcall) (plan.Expr, error) {
		return nil, c.b.errAt("bind", c.loc, "set-returning functions are not allowed here")
	}, sig("anyarray", "SETOF element (one row per element, in the select list or in FROM)"))
	contains := scalar(bindListContains, sig("anyarray, any element", "BOOLEAN"))
	fs["list_contains"], fs["array_contains"], fs["list_has"], fs["array_has"] = contains, contains, contains, contains
	fs["array_cat"] = scalar(bindArrayFunc("array_cat"), sig("anyarray, anyarray", "the arrays' type"))
	fs["array_append"] = scalar(bindArrayFunc("array_append"), sig("anyarray, any element", "the array's type"))
	fs["array_prepend"] = scalar(bindArrayFunc("array_prepend"), sig("any element, anyarray", "the array's type"))
	fs["range"] = &funcDef{kind: KindTable, sigs: []funcSig{
		sig("BIGINT stop", "SETOF BIGINT (0 up to stop, exclusive)"),
		sig("BIGINT start, BIGINT stop", "SETOF BIGINT (stop exclusive)"),
		sig("BIGINT start, BIGINT stop, BIGINT step", "SETOF BIGINT (stop exclusive)"),
		sig("TIMESTAMP start, TIMESTAMP stop, INTERVAL step", "SETOF TIMESTAMP (stop exclusive)"),
	}}
}

// bindTypeof binds pg_typeof(x) and typeof(x): the name of x's type, a
// constant (the argument is bound, so a bad one is still an error, but
// never evaluated).
func bindTypeof(name func(arrow.DataType) string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(1, 1); err != nil {
			return nil, err
		}
		return &plan.Literal{Typ: plan.Utf8, Val: name(c.args[0].Type())}, nil
	}
}

// pgTypeName is PostgreSQL's name of a type, as pg_typeof prints it.
// Text is "text" (sluice does not keep VARCHAR's length), a decimal is
// "numeric" (pg_typeof shows no precision), an untyped NULL "unknown".
func pgTypeName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.BOOL:
		return "boolean"
	case arrow.INT32:
		return "integer"
	case arrow.INT64:
		return "bigint"
	case arrow.FLOAT64:
		return "double precision"
	case arrow.DECIMAL128:
		return "numeric"
	case arrow.STRING:
		return "text"
	case arrow.DATE32:
		return "date"
	case arrow.TIMESTAMP:
		return "timestamp without time zone"
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return "interval"
	case arrow.NULL:
		return "unknown"
	case arrow.LIST:
		return pgTypeName(t.(*arrow.ListType).Elem()) + "[]"
	}
	return plan.TypeName(t)
}

// bindUUID binds gen_random_uuid() (and DuckDB's uuid()): volatile, a new
// value for every row. sluice has no UUID type, so the value is its text.
func bindUUID(c *fcall) (plan.Expr, error) {
	if err := c.nargs(0, 0); err != nil {
		return nil, err
	}
	return c.fn("gen_random_uuid", plan.Utf8), nil
}

// bindAge binds age(a, b), the symbolic difference a - b in years, months
// and days, and age(a), which is age(current_date, a). Dates are read as
// their midnight.
func bindAge(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 2); err != nil {
		return nil, err
	}
	if len(c.args) == 1 {
		today, err := c.b.builtinCall("current_date", nil, nil, c.loc)
		if err != nil {
			return nil, err
		}
		c.args = []plan.Expr{coerce(today, plan.Timestamp), c.args[0]}
		c.argLoc = []int32{c.loc, c.at(0)}
	}
	for i := range c.args {
		if err := c.timestamp(i); err != nil {
			return nil, err
		}
	}
	return c.fn("age", plan.Interval), nil
}

// bindArrayFunc binds array_cat(a, b), array_append(a, e) and
// array_prepend(e, a) as the || operator they spell.
// bindListContains binds DuckDB's list_contains(list, x) (and its names
// array_contains, list_has, array_has): whether x is an element of list,
// false when it is not (NULL elements do not make it NULL, unlike x =
// ANY(list)); NULL when list or x is.
func bindListContains(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	if err := c.array(0); err != nil {
		return nil, err
	}
	list, x := c.args[0], c.args[1]
	elem := list.Type().(interface{ Elem() arrowType }).Elem()
	if lit, ok := x.(*plan.Literal); ok {
		if v, ok := adaptLiteral(lit, elem); ok {
			x = v
		}
	}
	if x.Type().ID() == plan.Null.ID() {
		x = coerce(x, elem)
	}
	if t, ok := plan.CommonType(x.Type(), elem); !ok || !typeEq(t, elem) {
		return nil, c.b.errAt("type", c.at(1), "%s: cannot look for %s among the elements of %s", c.name, plan.TypeName(x.Type()), plan.TypeName(list.Type()))
	}
	x = coerce(x, elem)
	anyEq := &plan.Func{Name: "array_any", Args: []plan.Expr{x, list, &plan.Literal{Typ: plan.Utf8, Val: "="}}, Typ: plan.Bool}
	null := &plan.Binary{Op: plan.OpOr, L: &plan.IsNull{X: list}, R: &plan.IsNull{X: x}, Typ: plan.Bool}
	return &plan.Case{Whens: []plan.When{{Cond: null, Then: &plan.Literal{Typ: plan.Bool}}},
		Else: &plan.Func{Name: "coalesce", Args: []plan.Expr{anyEq, &plan.Literal{Typ: plan.Bool, Val: false}}, Typ: plan.Bool}, Typ: plan.Bool}, nil
}

func bindArrayFunc(name string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(2, 2); err != nil {
			return nil, err
		}
		arr := 0
		if name == "array_prepend" {
			arr = 1
		}
		if err := c.array(arr); err != nil {
			return nil, err
		}
		if name == "array_cat" {
			if err := c.array(1 - arr); err != nil {
				return nil, err
			}
		}
		e, err := c.b.arrayConcat(c.args[0], c.args[1], c.loc)
		if err != nil {
			return nil, err
		}
		if f, ok := e.(*plan.Func); !ok || f.Name != name {
			return nil, c.b.errAt("type", c.loc, "function %s does not take these arguments", name)
		}
		return e, nil
	}
}
