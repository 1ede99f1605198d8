package sql

import (
	"sluice/plan"
)

// More text functions: PostgreSQL's, and DuckDB's spellings users coming
// from it type (contains, ends_with, regexp_extract, instr, ucase, lcase).

func addStringFunctions(fs map[string]*funcDef) {
	scalar := func(bind func(c *fcall) (plan.Expr, error), sigs ...funcSig) *funcDef {
		return &funcDef{kind: KindScalar, bind: bind, sigs: sigs}
	}
	text1 := func(name string, typ arrowType, returns string) *funcDef {
		return scalar(textTo(name, typ, 1, 1), sig("VARCHAR", returns))
	}
	fs["replace"] = scalar(textTo("replace", plan.Utf8, 3, 3), sig("VARCHAR, VARCHAR from, VARCHAR to", "VARCHAR"))
	fs["translate"] = scalar(textTo("translate", plan.Utf8, 3, 3), sig("VARCHAR, VARCHAR from, VARCHAR to", "VARCHAR"))
	fs["left"] = scalar(bindTextInt("left"), sig("VARCHAR, BIGINT n", "VARCHAR"))
	fs["right"] = scalar(bindTextInt("right"), sig("VARCHAR, BIGINT n", "VARCHAR"))
	fs["reverse"] = text1("reverse", plan.Utf8, "VARCHAR")
	fs["initcap"] = text1("initcap", plan.Utf8, "VARCHAR")
	fs["md5"] = text1("md5", plan.Utf8, "VARCHAR")
	fs["sha256"] = text1("sha256", plan.Utf8, "VARCHAR")
	octets := text1("octet_length", plan.Int32, "INT")
	fs["octet_length"], fs["strlen"] = octets, octets
	fs["bit_length"] = text1("bit_length", plan.Int32, "INT")
	fs["ucase"] = text1("upper", plan.Utf8, "VARCHAR")
	fs["lcase"] = text1("lower", plan.Utf8, "VARCHAR")
	strpos := scalar(textTo("strpos", plan.Int32, 2, 2), sig("VARCHAR, VARCHAR substring", "INT"))
	fs["strpos"], fs["instr"] = strpos, strpos
	// POSITION(sub IN s) arrives as pg_catalog.position(s, sub).
	fs["position"] = scalar(textTo("strpos", plan.Int32, 2, 2), sig("VARCHAR, VARCHAR substring", "INT"))
	endsWith := scalar(textTo("ends_with", plan.Bool, 2, 2), sig("VARCHAR, VARCHAR suffix", "BOOLEAN"))
	fs["ends_with"], fs["suffix"] = endsWith, endsWith
	fs["prefix"] = scalar(textTo("starts_with", plan.Bool, 2, 2), sig("VARCHAR, VARCHAR prefix", "BOOLEAN"))
	fs["contains"] = scalar(textTo("contains", plan.Bool, 2, 2), sig("VARCHAR, VARCHAR substring", "BOOLEAN"))
	fs["to_hex"] = scalar(bindToHex, sig("INT", "VARCHAR"), sig("BIGINT", "VARCHAR"))
	fs["format"] = scalar(bindFormatText, sig("VARCHAR format, any, ...", "VARCHAR"), sig("VARCHAR format", "VARCHAR"))
	fs["regexp_extract"] = scalar(bindRegexpExtract, sig("VARCHAR, VARCHAR pattern", "VARCHAR"),
		sig("VARCHAR, VARCHAR pattern, BIGINT group", "VARCHAR"))
}

// bindTextInt binds a function of a text and an integer argument.
func bindTextInt(name string) func(c *fcall) (plan.Expr, error) {
	return func(c *fcall) (plan.Expr, error) {
		if err := c.nargs(2, 2); err != nil {
			return nil, err
		}
		if err := c.kinds("si"); err != nil {
			return nil, err
		}
		return c.fn(name, plan.Utf8), nil
	}
}

// bindToHex binds to_hex(x); x keeps its width, which decides how a
// negative number prints (to_hex(-1) is ffffffff for an INT).
func bindToHex(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1); err != nil {
		return nil, err
	}
	t := c.args[0].Type()
	switch {
	case t.ID() == plan.Null.ID():
		c.args[0] = coerce(c.args[0], plan.Int64)
	case t.ID() == plan.Int32.ID(), t.ID() == plan.Int64.ID():
	case plan.IsInteger(t):
		c.args[0] = coerce(c.args[0], plan.Int32)
	default:
		return nil, c.b.errAt("type", c.at(0), "function to_hex needs an integer argument, not %s", plan.TypeName(t))
	}
	return c.fn("to_hex", plan.Utf8), nil
}

// bindRegexpExtract binds DuckDB's regexp_extract(s, pattern [, group]);
// a constant pattern and group are checked now.
func bindRegexpExtract(c *fcall) (plan.Expr, error) {
	if err := c.nargs(2, 3); err != nil {
		return nil, err
	}
	if err := c.kinds("ssi"); err != nil {
		return nil, err
	}
	if pat, ok := stringConst(c.args[1]); ok {
		re, _, err := plan.CompileRegex(pat, "")
		if err != nil {
			return nil, c.b.errAt("bind", c.at(1), "%v", err)
		}
		if len(c.args) == 3 {
			if g, ok := intLit(c.args[2]); ok && (g < 0 || g > int64(re.NumSubexp())) {
				return nil, c.b.errAt("bind", c.at(2), "regexp_extract: group %d does not exist in the pattern (it has %d)", g, re.NumSubexp())
			}
		}
	}
	return c.fn("regexp_extract", plan.Utf8), nil
}

// bindFormatText binds format(fmt, args...): the arguments become text as
// concat's do.
func bindFormatText(c *fcall) (plan.Expr, error) {
	if err := c.nargs(1, 1<<16); err != nil {
		return nil, err
	}
	if err := c.str(0); err != nil {
		return nil, err
	}
	if err := c.textArgs(1); err != nil {
		return nil, err
	}
	return c.fn("format", plan.Utf8), nil
}
