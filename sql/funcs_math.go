package sql

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"sluice/plan"
)

// The math functions. Those PostgreSQL computes in double precision, and
// the transcendental ones it also has for numeric (sqrt, ln, exp, ...),
// take and return DOUBLE here, as in DuckDB: their numeric variants'
// extra digits are rarely what a query wants. ceil, floor, trunc and sign
// keep the kind of their argument.

func addMathFunctions(fs map[string]*funcDef) {
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	dbl := sig("DOUBLE", "DOUBLE")
	dbl2 := func(a, b string) funcSig { return sig("DOUBLE "+a+", DOUBLE "+b, "DOUBLE") }
	for _, name := range []string{"sqrt", "cbrt", "exp", "ln", "log10", "log2", "sin", "cos", "tan", "cot",
		"asin", "acos", "atan", "degrees", "radians"} {
		fs[name] = scalar(bindFloat(name, 1), dbl)
	}
	power := scalar(bindFloat("power", 2), dbl2("base", "exponent"))
	fs["power"], fs["pow"] = power, power
	fs["atan2"] = scalar(bindFloat("atan2", 2), dbl2("y", "x"))
	fs["log"] = scalar(bindLog, sig("DOUBLE", "DOUBLE (base 10)"), dbl2("base", "x"))
	num := "numeric"
	ceil := scalar(bindRoundDown("ceil"), sig(num, "same kind as argument (DECIMAL scale 0)"))
	fs["ceil"], fs["ceiling"] = ceil, ceil
	fs["floor"] = scalar(bindRoundDown("floor"), sig(num, "same kind as argument (DECIMAL scale 0)"))
	fs["trunc"] = scalar(bindRoundDown("trunc"), sig(num, "same kind as argument (DECIMAL scale 0)"),
		sig(num+", BIGINT digits", "same kind as argument (DECIMAL scale digits)"))
	fs["sign"] = scalar(bindSign, sig(num, "same kind as argument"))
	fs["mod"] = scalar(bindMod, sig(num+", "+num, "common type of the arguments"))
	gcdSigs := []funcSig{sig("INT, INT", "INT"), sig("BIGINT, BIGINT", "BIGINT")}
	fs["gcd"] = scalar(bindGcd, gcdSigs...)
	fs["lcm"] = scalar(bindGcd, gcdSigs...)
	fs["factorial"] = scalar(bindFactorial, sig("BIGINT", "DECIMAL(38,0)"))
	fs["pi"] = scalar(bindPi, sig("", "DOUBLE"))
	fs["random"] = scalar(bindRandom, sig("", "DOUBLE"))
}

// bindFloat binds a function of nargs DOUBLE arguments.
func bindFloat(name string, nargs int) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(nargs, nargs); err != nil {
			return nil, err
		}
		for i := range c.args {
			if err := c.float(i); err != nil {
				return nil, err
			}
		}
		return c.fn(name, plan.Float64), nil
	}
}

// float checks that argument i is a number and casts it to DOUBLE.
func (c *fcall) float(i int) error {
	if err := c.numeric(i); err != nil {
		return err
	}
	c.args[i] = coerce(c.args[i], plan.Float64)
	return nil
}

// bindLog binds log(x), the base-10 logarithm as in PostgreSQL, and
// log(b, x).
func bindLog(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 2); err != nil {
		return nil, err
	}
	if len(c.args) == 1 {
		return bindFloat("log10", 1)(c)
	}
	return bindFloat("log", 2)(c)
}

// bindRoundDown binds ceil, floor and trunc. A DECIMAL(p,s) result has
// scale 0 (trunc: the constant digits, at least 0), with one more integer
// digit for ceil and floor, whose carry can add one (ceil(9.5) is 10).
func bindRoundDown(name string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		hi := 1
		if name == "trunc" {
			hi = 2
		}
		if err := c.nargs(1, hi); err != nil {
			return nil, err
		}
		if err := c.numeric(0); err != nil {
			return nil, err
		}
		if len(c.args) == 2 {
			if err := c.integer(1); err != nil {
				return nil, err
			}
		}
		t := c.args[0].Type()
		dt, ok := t.(*arrow.Decimal128Type)
		if !ok {
			return c.fn(name, t), nil
		}
		scale := int64(0)
		if len(c.args) == 2 {
			d, isConst := intLit(c.args[1])
			if !isConst {
				// Digits known only at run time keep the argument's scale.
				return c.fn(name, t), nil
			}
			scale = max(d, 0)
		}
		prec := int64(dt.Precision) - int64(dt.Scale) + scale
		if name != "trunc" {
			prec++
		}
		prec = max(prec, 1)
		if prec > 38 {
			if scale > int64(dt.Scale) {
				return c.fn(name, t), nil
			}
			prec = 38
		}
		return c.fn(name, plan.Decimal(int32(prec), int32(scale))), nil
	}
}

// intLit returns the value of a non-NULL integer literal.
func intLit(e plan.Expr) (int64, bool) {
	if l, ok := e.(*plan.Literal); ok {
		switch v := l.Val.(type) {
		case int64:
			return v, true
		case int32:
			return int64(v), true
		}
	}
	return 0, false
}

// bindSign binds sign(x): -1, 0 or 1, as DECIMAL(1,0) for decimals.
func bindSign(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if err := c.numeric(0); err != nil {
		return nil, err
	}
	t := c.args[0].Type()
	if _, ok := t.(*arrow.Decimal128Type); ok {
		t = plan.Decimal(1, 0)
	}
	return c.fn("sign", t), nil
}

// bindMod binds mod(a, b) as the % operator.
func bindMod(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	return c.b.arith(plan.OpMod, c.args[0], c.args[1], c.loc)
}

// bindGcd binds gcd and lcm: INT when both arguments are INT (or
// smaller), BIGINT otherwise.
func bindGcd(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 2); err != nil {
		return nil, err
	}
	t := plan.Int32
	for i, a := range c.args {
		at := a.Type()
		if !plan.IsInteger(at) && at.ID() != plan.Null.ID() {
			return nil, c.b.errAt("type", c.at(i), "function %s needs integer arguments, not %s", c.name, plan.TypeName(at))
		}
		if at.ID() == plan.Int64.ID() {
			t = plan.Int64
		}
	}
	for i := range c.args {
		c.args[i] = coerce(c.args[i], t)
	}
	return c.fn(c.name, t), nil
}

func bindFactorial(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	if err := c.integer(0); err != nil {
		return nil, err
	}
	return c.fn("factorial", plan.Decimal(38, 0)), nil
}

func bindPi(c *fcall) (plan.Expr, error) {
	if err := c.nargs(0, 0); err != nil {
		return nil, err
	}
	return &plan.Literal{Typ: plan.Float64, Val: math.Pi}, nil
}

// bindRandom binds random(): volatile, each row draws its own value. No
// rule folds a function call to a constant, so it stays a call.
func bindRandom(c *fcall) (plan.Expr, error) {
	if err := c.nargs(0, 0); err != nil {
		return nil, err
	}
	return c.fn("random", plan.Float64), nil
}
