package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// More date and time functions: date_diff, make_date, make_timestamp,
// last_day, to_timestamp, to_char, strftime, dayname, monthname, and DuckDB's one-field
// functions (year(x), dayofweek(x), epoch(x), ...), which are EXTRACT of
// that field.

func addDateFunctions(fs map[string]*funcDef) {
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	for _, f := range []string{"year", "quarter", "month", "week", "weekofyear", "day", "dayofmonth",
		"dayofweek", "isodow", "dayofyear", "hour", "minute", "isoyear"} {
		fs[f] = scalar(bindPart(f), sig("DATE", "INT"), sig("TIMESTAMP", "INT"))
	}
	fs["epoch"] = scalar(bindPart("epoch"), sig("DATE", "DOUBLE"), sig("TIMESTAMP", "DOUBLE"))
	diff := scalar(bindDateDiff, sig("VARCHAR unit, TIMESTAMP start, TIMESTAMP end", "BIGINT"),
		sig("VARCHAR unit, DATE start, DATE end", "BIGINT"))
	fs["date_diff"], fs["datediff"] = diff, diff
	fs["make_date"] = scalar(bindMakeDate, sig("BIGINT year, BIGINT month, BIGINT day", "DATE"))
	fs["make_timestamp"] = scalar(bindMakeTimestamp,
		sig("BIGINT year, BIGINT month, BIGINT day, BIGINT hour, BIGINT min, DOUBLE sec", "TIMESTAMP"))
	fs["last_day"] = scalar(bindLastDay, sig("DATE", "DATE"), sig("TIMESTAMP", "DATE"))
	fs["to_timestamp"] = scalar(bindToTimestamp, sig("DOUBLE seconds", "TIMESTAMP"), sig("VARCHAR, VARCHAR template", "TIMESTAMP"))
	fs["to_date"] = scalar(textTo("to_date", plan.Date32, 2, 2), sig("VARCHAR, VARCHAR template", "DATE"))
	fs["strptime"] = scalar(textTo("strptime", plan.Timestamp, 2, 2), sig("VARCHAR, VARCHAR format", "TIMESTAMP"))
	fs["to_char"] = scalar(bindFormat, sig("TIMESTAMP, VARCHAR format", "VARCHAR"), sig("DATE, VARCHAR format", "VARCHAR"))
	fs["strftime"] = scalar(bindFormat, sig("TIMESTAMP, VARCHAR format", "VARCHAR"), sig("DATE, VARCHAR format", "VARCHAR"))
	fs["make_interval"] = scalar(nil, sig("INT years, INT months, INT weeks, INT days, INT hours, INT mins, DOUBLE secs", "INTERVAL"))
	fs["dayname"] = scalar(bindNamed("%A"), sig("DATE", "VARCHAR"), sig("TIMESTAMP", "VARCHAR"))
	fs["monthname"] = scalar(bindNamed("%B"), sig("DATE", "VARCHAR"), sig("TIMESTAMP", "VARCHAR"))
}

// bindNamed binds DuckDB's dayname(x) and monthname(x): strftime of x in
// format ('Monday', 'January').
func bindNamed(format string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(1, 1); err != nil {
			return nil, err
		}
		f := &fcall{b: c.b, name: "strftime", args: []plan.Expr{c.args[0], &plan.Literal{Typ: plan.Utf8, Val: format}},
			argLoc: []int32{c.at(0), c.loc}, loc: c.loc}
		return bindFormat(f)
	}
}

// extractAliases are DuckDB's names of EXTRACT fields.
var extractAliases = map[string]string{
	"dayofweek": "dow", "dayofyear": "doy", "dayofmonth": "day", "weekofyear": "week",
}

// bindPart binds DuckDB's year(x), dayofweek(x), ...: EXTRACT of the
// field. epoch(x) is seconds as a DOUBLE, as date_part gives them.
func bindPart(field string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(1, 1); err != nil {
			return nil, err
		}
		name := "extract"
		if field == "epoch" {
			name = "date_part"
		}
		args := []plan.Expr{&plan.Literal{Typ: plan.Utf8, Val: field}, c.args[0]}
		return bindExtract(&fcall{b: c.b, name: name, args: args, argLoc: []int32{c.loc, c.at(0)}, loc: c.loc})
	}
}

// timestamp checks that argument i is a DATE or TIMESTAMP (or a string
// constant that reads as one) and casts it to TIMESTAMP.
func (c *fcall) timestamp(i int) error {
	x := c.args[i]
	switch {
	case isStringLit(x), x.Type().ID() == plan.Null.ID(), x.Type().ID() == plan.Date32.ID():
		x = coerce(x, plan.Timestamp)
	case x.Type().ID() == plan.Timestamp.ID():
	default:
		return c.b.errAt("type", c.at(i), "function %s needs a DATE or TIMESTAMP, not %s", c.name, plan.TypeName(x.Type()))
	}
	if l, ok := x.(*plan.Literal); ok && l.Typ.ID() != plan.Timestamp.ID() {
		return c.b.errAt("type", c.at(i), "invalid input syntax for type TIMESTAMP: %s", l)
	}
	c.args[i] = x
	return nil
}

// bindDateDiff binds date_diff(part, start, end) (DuckDB's): the number
// of part boundaries from start to end, as BIGINT. The part must be a
// constant.
func bindDateDiff(c *fcall) (plan.Expr, error) {
	if err := c.nargs(3, 3); err != nil {
		return nil, err
	}
	part, ok := stringConst(c.args[0])
	if !ok {
		return nil, c.b.errAt("bind", c.at(0), "%s needs a constant part such as 'day'", c.name)
	}
	unit, ok := plan.DiffUnit(strings.ToLower(part))
	if !ok {
		return nil, c.b.errAt("bind", c.at(0), "%s: unit %q not recognized (use year, quarter, month, week, day, hour, minute, second, millisecond or microsecond)", c.name, part)
	}
	c.args[0] = &plan.Literal{Typ: plan.Utf8, Val: unit}
	for i := 1; i < 3; i++ {
		if err := c.timestamp(i); err != nil {
			return nil, err
		}
	}
	return c.fn("date_diff", plan.Int64), nil
}

func bindMakeDate(c *fcall) (plan.Expr, error) {
	if err := c.nargs(3, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("i"); err != nil {
		return nil, err
	}
	return c.fn("make_date", plan.Date32), nil
}

func bindMakeTimestamp(c *fcall) (plan.Expr, error) {
	if err := c.nargs(6, 6); err != nil {
		return nil, err
	}
	for i := 0; i < 5; i++ {
		if err := c.integer(i); err != nil {
			return nil, err
		}
	}
	if err := c.float(5); err != nil {
		return nil, err
	}
	return c.fn("make_timestamp", plan.Timestamp), nil
}

// bindLastDay binds DuckDB's last_day(x): the last day of x's month.
func bindLastDay(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if c.args[0].Type().ID() != plan.Date32.ID() {
		if err := c.timestamp(0); err != nil {
			return nil, err
		}
	}
	return c.fn("last_day", plan.Date32), nil
}

// bindToTimestamp binds to_timestamp(seconds since the epoch) and
// to_timestamp(text, template).
func bindToTimestamp(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 2); err != nil {
		return nil, err
	}
	if len(c.args) == 2 {
		if err := c.kinds("s"); err != nil {
			return nil, err
		}
		return c.fn("to_timestamp", plan.Timestamp), nil
	}
	if err := c.float(0); err != nil {
		return nil, err
	}
	return c.fn("to_timestamp", plan.Timestamp), nil
}

// bindFormat binds to_char(x, template) (PostgreSQL's template patterns)
// and strftime(x, format) (C's % codes) on dates and timestamps.
func bindFormat(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	if err := c.timestamp(0); err != nil {
		return nil, err
	}
	if err := c.str(1); err != nil {
		return nil, err
	}
	return c.fn(c.name, plan.Utf8), nil
}

// makeIntervalParams are make_interval's parameters, in order, and the
// interval one unit of each is.
var makeIntervalParams = []struct {
	name string
	unit string
}{{"years", "1 year"}, {"months", "1 mon"}, {"weeks", "7 days"}, {"days", "1 day"},
	{"hours", "1 hour"}, {"mins", "1 minute"}, {"secs", "1 second"}}

// makeInterval binds PostgreSQL's make_interval(years, months, weeks,
// days, hours, mins, secs), each argument optional and given by position
// or by name (make_interval(days => 3)): the sum of each argument times
// its unit, so fractions cascade as interval * number does.
func (b *binder) makeInterval(f *pg.FuncCall, c ectx) (plan.Expr, error) {
	given := make([]*pg.Node, len(makeIntervalParams))
	named := false
	for i, a := range f.Args {
		k := i
		if na := a.GetNamedArgExpr(); na != nil {
			named = true
			k = -1
			for j, p := range makeIntervalParams {
				if strings.EqualFold(p.name, na.Name) {
					k = j
				}
			}
			if k < 0 {
				return nil, b.errAt("bind", na.Location, "make_interval has no parameter %q (it takes years, months, weeks, days, hours, mins, secs)", na.Name)
			}
			a = na.Arg
		} else if named {
			return nil, b.errAt("bind", nodeLoc(a), "make_interval: a positional argument cannot follow a named one")
		}
		if k >= len(given) {
			return nil, b.errAt("bind", nodeLoc(a), "make_interval takes at most %d arguments", len(given))
		}
		if given[k] != nil {
			return nil, b.errAt("bind", nodeLoc(a), "make_interval: %s is given twice", makeIntervalParams[k].name)
		}
		given[k] = a
	}
	var sum plan.Expr = &plan.Literal{Typ: plan.Interval, Val: arrow.MonthDayNanoInterval{}}
	for k, a := range given {
		if a == nil {
			continue
		}
		x, err := b.expr(a, c)
		if err != nil {
			return nil, err
		}
		if t := x.Type(); t.ID() != plan.Null.ID() && !plan.IsNumeric(t) {
			return nil, b.errAt("type", nodeLoc(a), "make_interval: %s must be a number, not %s", makeIntervalParams[k].name, plan.TypeName(t))
		}
		unit, err := plan.ParseInterval(makeIntervalParams[k].unit)
		if err != nil {
			return nil, err
		}
		if x.Type().ID() == plan.Null.ID() {
			x = coerce(x, plan.Int64)
		}
		term := &plan.Binary{Op: plan.OpMul, L: &plan.Literal{Typ: plan.Interval, Val: unit}, R: x, Typ: plan.Interval}
		sum = &plan.Binary{Op: plan.OpAdd, L: sum, R: term, Typ: plan.Interval}
	}
	return sum, nil
}
