package sql

import (
	"errors"

	pg "github.com/pganalyze/pg_query_go/v6"

	"sluice/plan"
)

// similar binds x [NOT] SIMILAR TO pattern [ESCAPE e]. PostgreSQL's
// grammar already turns the pattern into similar_to_escape(pattern[, e])
// (bound by bindSimilarToEscape, to a constant when it can be), so the
// test is a regular expression match of its result.
func (b *binder) similar(x *pg.A_Expr, c ectx) (plan.Expr, error) {
	l, err := b.expr(x.Lexpr, c)
	if err != nil {
		return nil, err
	}
	r, err := b.expr(x.Rexpr, c)
	if err != nil {
		return nil, err
	}
	for _, e := range []plan.Expr{l, r} {
		if id := e.Type().ID(); id != plan.Utf8.ID() && id != plan.Null.ID() {
			te := b.errAt("type", x.Location, "SIMILAR TO needs VARCHAR operands, not %s", plan.TypeName(e.Type()))
			te.Hint = "cast the value to text: x::text SIMILAR TO ..."
			return nil, te
		}
	}
	var out plan.Expr = &plan.Func{Name: "regexp_like", Args: []plan.Expr{coerce(l, plan.Utf8), coerce(r, plan.Utf8)}, Typ: plan.Bool}
	if opName := stringList(x.Name); len(opName) > 0 && opName[len(opName)-1] == "!~" {
		out = &plan.Not{X: out}
	}
	return out, nil
}

// regexOp binds the POSIX match operators ~, ~*, !~ and !~* as
// regexp_like(l, r[, 'i']).
func (b *binder) regexOp(op string, l, r plan.Expr, loc int32) (plan.Expr, error) {
	args := []plan.Expr{l, r}
	if op == "~*" || op == "!~*" {
		args = append(args, &plan.Literal{Typ: plan.Utf8, Val: "i"})
	}
	e, err := bindRegexpLike(&fcall{b: b, name: "regexp_like", args: args, argLoc: []int32{loc, loc, loc}, loc: loc})
	if err != nil {
		return nil, err
	}
	if op[0] == '!' {
		return &plan.Not{X: e}, nil
	}
	return e, nil
}

// bindRegexpLike binds regexp_like(s, pattern[, flags]): whether the
// pattern matches somewhere in s.
func bindRegexpLike(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("s"); err != nil {
		return nil, err
	}
	pat, ok1 := stringConst(c.args[1])
	flags, ok2 := "", true
	if len(c.args) == 3 {
		flags, ok2 = stringConst(c.args[2])
	}
	if ok1 && ok2 {
		_, global, err := plan.CompileRegex(pat, flags)
		if err == nil && global {
			e := c.b.errAt("bind", c.at(2), "regexp_like() does not support the \"global\" option")
			e.Hint = "leave out the g flag"
			return nil, e
		}
		if err != nil {
			return nil, c.b.errAt("bind", c.at(1), "%v", err)
		}
	}
	return c.fn("regexp_like", plan.Bool), nil
}

// bindSimilarToEscape binds similar_to_escape(pattern[, escape]). With
// constant arguments the translation is done here, so a bad pattern or
// escape is an error before the query runs and executors get the regular
// expression itself.
func bindSimilarToEscape(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 2); err != nil {
		return nil, err
	}
	if err := c.kinds("s"); err != nil {
		return nil, err
	}
	pat, ok := stringConst(c.args[0])
	esc := `\`
	if len(c.args) == 2 {
		var ok2 bool
		esc, ok2 = stringConst(c.args[1])
		ok = ok && ok2
	}
	if !ok {
		return c.fn("similar_to_escape", plan.Utf8), nil
	}
	re, err := plan.SimilarToRegex(pat, esc)
	if err != nil {
		at := c.at(0)
		if errors.Is(err, plan.ErrSimilarEscape) {
			at = c.at(1)
		}
		e := c.b.errAt("bind", at, "%v", err)
		if errors.Is(err, plan.ErrSimilarEscape) {
			e.Hint = "Escape string must be empty or one character."
		}
		return nil, e
	}
	if err := checkRegex(re, ""); err != nil {
		return nil, c.b.errAt("bind", c.at(0), "invalid SIMILAR TO pattern %q: %v", pat, err)
	}
	return &plan.Literal{Typ: plan.Utf8, Val: re}, nil
}
